// Reads a V8 .cpuprofile (written by `node --cpu-prof`) and aggregates self time per function.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface SelfTimeRow {
  /** `functionName url:line` */
  name: string;
  selfMs: number;
  /** Share of the busy time (everything but `(idle)`). */
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  busyMs: number;
  rows: SelfTimeRow[];
}

/** Shortens file URLs: drops `file://`, the repository root and pnpm's store prefix. */
function shortUrl(url: string, repoRoot: string): string {
  let u = url.startsWith("file://") ? url.slice("file://".length) : url;
  const pnpm = u.lastIndexOf("/node_modules/");
  if (pnpm >= 0) u = u.slice(pnpm + "/node_modules/".length);
  else if (u.startsWith(repoRoot + "/")) u = u.slice(repoRoot.length + 1);
  return u;
}

/**
 * Self time per function, aggregated by function name + url:line (several nodes of the call tree
 * are the same function reached through different callers). Each sample is charged the interval
 * up to the next sample, as Chrome DevTools does.
 */
export function summariseProfile(file: string, repoRoot: string, top = 25, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) byId.set(n.id, n);
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  if (samples.length > 0) {
    let t = profile.startTime;
    const stamps: number[] = [];
    for (let i = 0; i < samples.length; i++) {
      t += deltas[i] ?? 0;
      stamps.push(t);
    }
    for (let i = 0; i < samples.length; i++) {
      const next = i + 1 < samples.length ? stamps[i + 1]! : profile.endTime;
      // A window (µs of the monotonic clock V8 stamps samples with, the one process.hrtime reads)
      // counts only the samples taken in it.
      if (window && (stamps[i]! < window.fromUs || stamps[i]! >= window.toUs)) continue;
      const dt = Math.max(0, next - stamps[i]!);
      const id = samples[i]!;
      selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
    }
  } else {
    // Old format: hit counts only; spread the wall time evenly.
    const hits = profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0) || 1;
    const per = (profile.endTime - profile.startTime) / hits;
    for (const n of profile.nodes) if (n.hitCount) selfUs.set(n.id, n.hitCount * per);
  }

  const agg = new Map<string, number>();
  let idle = 0;
  let total = 0;
  for (const [id, us] of selfUs) {
    const cf = byId.get(id)?.callFrame;
    if (!cf) continue;
    total += us;
    if (cf.functionName === "(idle)") {
      idle += us;
      continue;
    }
    const fn = cf.functionName || "(anonymous)";
    const key = cf.url ? `${fn} ${shortUrl(cf.url, repoRoot)}:${cf.lineNumber + 1}` : fn;
    agg.set(key, (agg.get(key) ?? 0) + us);
  }
  const busy = total - idle;
  const rows = [...agg.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, selfMs: us / 1000, share: busy > 0 ? us / busy : 0 }));
  return { totalMs: total / 1000, idleMs: idle / 1000, busyMs: busy / 1000, rows };
}

/**
 * Stops a service started under --cpu-prof so it writes its profile, starts it again without
 * (`nodeArgs` is read at every launch), and answers the profile's file: one file per thread
 * (tsx's module hooks run on a worker thread), the main thread's the biggest.
 */
export async function collectProfile<S extends string>(
  suite: { stopService(name: S, signal: NodeJS.Signals): Promise<unknown>; startService(name: S): Promise<unknown> },
  service: S,
  nodeArgs: Partial<Record<S, string[]>>,
  dir: string,
): Promise<string | undefined> {
  await suite.stopService(service, "SIGTERM");
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")) : [];
  delete nodeArgs[service];
  await suite.startService(service);
  return files.map((f) => join(dir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0];
}
