// The large-file downloads: bench/downloader.ts in its own process, targets taking turns.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { SERVICE_NODE_OPTIONS } from "@svc/devstack/runtime";
import { LARGE_PATH, LARGE_RUNS, LARGE_SIZE, log, repoRoot } from "./options.js";
import { cpuDelta, cpuSum, snapshot, type CpuSnapshot, type Procs } from "./procstat.js";

export interface LargeResult {
  label: string;
  runs: number[];
  mbps: number;
  cpu: CpuSnapshot;
  seconds: number;
}

/** The large-file client: bench/downloader.ts in its own process, driven over stdin/stdout. */
export interface Downloader {
  pid: number;
  /** Downloads once, discarding the body; MB/s (10^6 bytes per second). */
  download(url: string, headers: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

export function startDownloader(): Downloader {
  const child = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, "--import", "tsx", join(repoRoot, "bench", "downloader.ts")], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map<number, { resolve: (a: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  let next = 1;
  let buf = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const answer = JSON.parse(buf.slice(0, i)) as Record<string, unknown>;
      buf = buf.slice(i + 1);
      const w = waiting.get(answer.id as number);
      waiting.delete(answer.id as number);
      w?.resolve(answer);
    }
  });
  child.once("exit", (code) => {
    for (const w of waiting.values()) w.reject(new Error(`the downloader exited (${code})`));
    waiting.clear();
  });
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  return {
    pid: child.pid ?? 0,
    async download(url, headers) {
      const id = next++;
      const answer = await new Promise<Record<string, unknown>>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        child.stdin.write(`${JSON.stringify({ id, url, headers })}\n`);
      });
      if (answer.error) throw new Error(`GET ${url}: ${String(answer.error)}`);
      if (answer.status !== 200 || answer.bytes !== LARGE_SIZE) throw new Error(`GET ${url} answered ${String(answer.status)} with ${String(answer.bytes)} bytes (expected 200, ${LARGE_SIZE})`);
      return (answer.bytes as number) / (answer.seconds as number) / 1e6;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        process.removeListener("exit", kill);
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(kill, 5000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        child.stdin.end();
      }),
  };
}

export type LargeRun = { mbps: number; seconds: number; cpu: CpuSnapshot };

/** One timed download, with the CPU the processes spent on it. */
export async function largeOnce(client: Downloader, base: string, headers: () => Record<string, string>, procs: Procs): Promise<LargeRun> {
  const p = { ...procs, client: client.pid };
  const before = snapshot(p);
  const t0 = performance.now();
  const mbps = await client.download(base + LARGE_PATH, headers());
  return { mbps, seconds: (performance.now() - t0) / 1000, cpu: cpuDelta(before, snapshot(p)) };
}

/** A target's run answers undefined when the target is not there this time (nginx not installed). */
export type LargeTarget = { label: string; run: (procs: Procs) => Promise<LargeRun | undefined> };

/** A warm-up download per target, then LARGE_RUNS rounds in which the targets take turns. */
export async function measureLarge(targets: LargeTarget[], procs: () => Procs): Promise<LargeResult[]> {
  const acc = new Map(targets.map((t) => [t.label, { label: t.label, runs: [] as number[], seconds: 0, cpu: { client: 0, gateway: 0, artifacts: 0, nginx: 0 } }]));
  log(`large: one warm-up download of 256 MiB per target, then ${LARGE_RUNS} rounds`);
  for (const t of targets) await t.run(procs());
  for (let round = 0; round < LARGE_RUNS; round++) {
    for (const t of targets) {
      const r = await t.run(procs());
      if (!r) continue;
      const a = acc.get(t.label)!;
      a.runs.push(r.mbps);
      a.seconds += r.seconds;
      a.cpu = cpuSum(a.cpu, r.cpu);
    }
  }
  const large: LargeResult[] = [];
  for (const a of acc.values()) if (a.runs.length) large.push({ ...a, mbps: (a.runs.length * LARGE_SIZE) / a.seconds / 1e6 });
  return large;
}
