// The small-file load: autocannon against one target for a round, with the CPU each process spent.
import autocannon from "autocannon";
import { CONNECTIONS, DURATION, log, ROUNDS, SMALL_PATH, WARMUP } from "./options.js";
import { cpuDelta, cpuSum, snapshot, type CpuSnapshot, type Procs } from "./procstat.js";

export interface SmallRound {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  seconds: number;
  cpu: CpuSnapshot;
}

/** Headers for every request, or a function called for each one (signatures, below). */
export type RequestHeaders = Record<string, string> | (() => Record<string, string>);

/**
 * An upstream accepts a signature once (its replay guard), so the direct runs sign each request
 * afresh, as the gateway does; fixed headers (a key) go the cheaper way.
 */
async function cannon(url: string, headers: RequestHeaders, seconds: number): Promise<autocannon.Result> {
  const base = { url, connections: CONNECTIONS, pipelining: 1, duration: seconds };
  if (typeof headers !== "function") return autocannon({ ...base, headers });
  const u = new URL(url);
  return autocannon({ ...base, requests: [{ method: "GET", path: u.pathname + u.search, setupRequest: (req) => ({ ...req, headers: { ...req.headers, ...headers() } }) }] });
}

/** One measured run (after a warm-up on the first round); headers are made for each request (signatures age, and are accepted once). */
export async function smallRound(label: string, round: number, base: string, headers: RequestHeaders, procs: Procs): Promise<SmallRound> {
  if (round === 0) {
    log(`small: ${label}: ${WARMUP} s warm-up`);
    await cannon(base + SMALL_PATH, headers, WARMUP);
  }
  log(`small: ${label}: round ${round + 1}/${ROUNDS}, ${DURATION} s, ${CONNECTIONS} connections`);
  const before = snapshot(procs);
  const r = await cannon(base + SMALL_PATH, headers, DURATION);
  const cpu = cpuDelta(before, snapshot(procs));
  return { rps: r["2xx"] / r.duration, p50: r.latency.p50, p99: r.latency.p99, ok: r["2xx"], non2xx: r.non2xx, errors: r.errors, seconds: r.duration, cpu };
}

export interface SmallResult {
  label: string;
  rounds: SmallRound[];
  /** All rounds together: 2xx answers per second. */
  rps: number;
  ok: number;
  seconds: number;
  cpu: CpuSnapshot;
}

export function summariseSmall(label: string, rounds: SmallRound[]): SmallResult {
  const ok = rounds.reduce((a, r) => a + r.ok, 0);
  const seconds = rounds.reduce((a, r) => a + r.seconds, 0);
  const cpu = rounds.reduce((a, r) => cpuSum(a, r.cpu), { client: 0, gateway: 0, artifacts: 0, nginx: 0 });
  return { label, rounds, rps: ok / seconds, ok, seconds, cpu };
}
