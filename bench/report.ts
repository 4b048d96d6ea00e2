// The printed report: the tables, the ratios against the goals, and the profile's top functions.
import { cpus } from "node:os";
import { summariseProfile } from "./cpuprofile.js";
import type { LargeResult } from "./large-files.js";
import { CONNECTIONS, DURATION, GOAL_LARGE, GOAL_SMALL, LARGE_RUNS, LARGE_SIZE, NGINX, PROFILE, PROFILE_SERVICE, profileDir, RATE_LIMIT, repoRoot, ROUNDS, WARMUP } from "./options.js";
import type { CpuSnapshot } from "./procstat.js";
import type { SmallResult } from "./small-files.js";

export function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  // Figures are right-aligned, text left-aligned.
  const numeric = head.map((_, i) => cells.slice(1).every((r) => /^[-+\d.,%/ ]*$/.test(r[i] ?? "")));
  const line = (r: string[]) => r.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n");
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "-");
const pct = (ratio: number) => (Number.isFinite(ratio) ? `${(ratio * 100).toFixed(1)}%` : "-");
/** Each process's CPU as a share of one core over the measured seconds: the "CPU%" columns. */
const cpuShares = (cpu: CpuSnapshot, seconds: number) => [cpu.client, cpu.gateway, cpu.artifacts, cpu.nginx].map((ms) => fmt((ms / (seconds * 1000)) * 100));
/** The "CPU per request / per MB" table: each process's CPU ms (and their total) as a cost per unit. */
function cpuPerUnit<T extends { label: string; cpu: CpuSnapshot }>(rows: T[], per: (ms: number, r: T) => number, digits = 0): string {
  return table(
    ["target", "client", "gateway", "artifacts", "nginx", "total"],
    rows.map((r) => {
      const c = r.cpu;
      return [r.label, ...[c.client, c.gateway, c.artifacts, c.nginx, c.client + c.gateway + c.artifacts + c.nginx].map((ms) => fmt(per(ms, r), digits))];
    }),
  );
}
const byLabel = <T extends { label: string }>(rows: T[], l: string) => rows.find((r) => r.label === l);

export interface BenchFigures {
  small: SmallResult[];
  large: LargeResult[];
  /** The nginx binary when its rows were measured. */
  nginxBin: string | undefined;
  /** The gateway's profile (--profile), when one was written. */
  profileFile: string | undefined;
}

export function printReport({ small, large, nginxBin, profileFile }: BenchFigures): void {
  const cpuModel = cpus()[0]?.model ?? "unknown CPU";
  console.log("");
  console.log(`Gateway benchmark — node ${process.version}, ${cpus().length} cores (${cpuModel})`);
  console.log(`Client, gateway, artifacts service (and nginx) share these cores.${PROFILE ? " The gateway's small-file runs were made under --cpu-prof." : ""}`);
  console.log(`Gateway rate limit: ${RATE_LIMIT === 0 ? "off (--rate-limit=0)" : `${RATE_LIMIT} requests/minute per tenant (on, never reached: every request is still charged in Redis, most without waiting for it)`}.`);
  console.log(`Goals: gateway >= ${GOAL_SMALL * 100}% of direct on 1 KiB GETs (req/s), >= ${GOAL_LARGE * 100}% on 256 MiB GETs (MB/s).`);
  if (!nginxBin) console.log(NGINX ? "nginx: not installed (apt-get install -y nginx), its rows are left out." : "nginx: skipped (--no-nginx).");
  if (small.length) printSmall(small);
  if (large.length) printLarge(large);
  if (PROFILE) printProfile(profileFile);
  console.log("");
}

function printSmall(small: SmallResult[]): void {
  const sd = byLabel(small, "direct");
  console.log("");
  console.log(`1 KiB GET, ${CONNECTIONS} connections, ${ROUNDS} round(s) of ${DURATION} s per target taken in turns, after a ${WARMUP} s warm-up (autocannon)`);
  console.log(
    table(
      ["target", "req/s", "rounds req/s", "p50 ms", "p99 ms", "vs direct", "2xx", "non-2xx", "errors", "CPU% client", "CPU% gateway", "CPU% artifacts", "CPU% nginx"],
      small.map((r) => [
        r.label,
        fmt(r.rps),
        r.rounds.map((x) => fmt(x.rps)).join(" / "),
        fmt(r.rounds.reduce((a, x) => a + x.p50, 0) / r.rounds.length, 1),
        fmt(Math.max(...r.rounds.map((x) => x.p99)), 1),
        sd ? pct(r.rps / sd.rps) : "-",
        r.ok,
        r.rounds.reduce((a, x) => a + x.non2xx, 0),
        r.rounds.reduce((a, x) => a + x.errors, 0),
        ...cpuShares(r.cpu, r.seconds),
      ]),
    ),
  );
  console.log("(req/s: all rounds together; p50: mean of the rounds; p99: the worst round)");
  console.log("");
  console.log("CPU per request (µs)");
  console.log(cpuPerUnit(small, (ms, r) => (r.ok > 0 ? (ms * 1000) / r.ok : NaN)));
  const sg = byLabel(small, "gateway");
  const smallRatio = sg && sd ? sg.rps / sd.rps : NaN;
  console.log("");
  console.log(`small files: gateway/direct = ${pct(smallRatio)} (goal >= ${GOAL_SMALL * 100}%: ${smallRatio >= GOAL_SMALL ? "met" : "not met"})`);
  const sn = byLabel(small, "nginx");
  if (sn && sd) console.log(`             nginx/direct   = ${pct(sn.rps / sd.rps)}`);
  const su = byLabel(small, "gateway, no limit");
  if (su && sg) {
    const cost = 1 - sg.rps / su.rps;
    const cpuPerReq = (r: SmallResult) => (r.ok > 0 ? (r.cpu.gateway * 1000) / r.ok : NaN);
    const cpuCost = cpuPerReq(sg) / cpuPerReq(su) - 1;
    console.log(`rate limit:  gateway with the limit ${fmt(sg.rps)} req/s, without ${fmt(su.rps)} req/s: costs ${pct(cost)} of throughput (goal < 10%: ${cost < 0.1 ? "met" : "not met"})`);
    console.log(`             gateway CPU per request ${fmt(cpuPerReq(sg))} µs with the limit, ${fmt(cpuPerReq(su))} µs without: ${cpuCost >= 0 ? "+" : ""}${pct(cpuCost)} (steadier than req/s on a shared VM)`);
  }
}

function printLarge(large: LargeResult[]): void {
  const ld = byLabel(large, "direct");
  console.log("");
  console.log(`256 MiB GET, ${LARGE_RUNS} downloads per target taken in turns after a warm-up download each, body discarded (MB = 10^6 bytes)`);
  console.log(
    table(
      ["target", "MB/s", "runs MB/s", "vs direct", "CPU% client", "CPU% gateway", "CPU% artifacts", "CPU% nginx"],
      large.map((r) => [
        r.label,
        fmt(r.mbps),
        r.runs.map((x) => fmt(x)).join(" / "),
        ld ? pct(r.mbps / ld.mbps) : "-",
        ...cpuShares(r.cpu, r.seconds),
      ]),
    ),
  );
  console.log("");
  console.log("CPU per MB (ms)");
  console.log(cpuPerUnit(large, (ms, r) => ms / ((r.runs.length * LARGE_SIZE) / 1e6), 2));
  const lg = byLabel(large, "gateway");
  const largeRatio = lg && ld ? lg.mbps / ld.mbps : NaN;
  console.log("");
  console.log(`large files: gateway/direct = ${pct(largeRatio)} (goal >= ${GOAL_LARGE * 100}%: ${largeRatio >= GOAL_LARGE ? "met" : "not met"})`);
  const lt = byLabel(large, "gateway, TCP");
  if (lt && ld) console.log(`             gateway over loopback TCP/direct = ${pct(lt.mbps / ld.mbps)} (the gateway above reaches the artifacts service over a Unix socket)`);
  const ln = byLabel(large, "nginx");
  if (ln && ld) console.log(`             nginx/direct   = ${pct(ln.mbps / ld.mbps)}`);
}

function printProfile(profileFile: string | undefined): void {
  console.log("");
  if (!profileFile) {
    console.log(`profile: no .cpuprofile was written to ${profileDir}`);
    return;
  }
  const p = summariseProfile(profileFile, repoRoot, 25);
  console.log(`${PROFILE_SERVICE} CPU profile (${profileFile}): ${fmt(p.busyMs)} ms busy, ${fmt(p.idleMs)} ms idle`);
  console.log("Top 25 functions by self time (share of busy time)");
  console.log(table(["self ms", "share", "function url:line"], p.rows.map((r) => [fmt(r.selfMs, 1), pct(r.share), r.name])));
}
