// CPU time and memory of processes from /proc (Linux), to show where the two cores go during a run.
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";

const TICKS = (() => {
  const r = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

function children(pid: number | "self"): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
      if (text) for (const c of text.split(/\s+/)) out.push(Number(c));
    }
  } catch {
    /* gone, or no /proc */
  }
  return out;
}

/**
 * Milliseconds a process's live threads have run, from the scheduler's own count
 * (`/proc/<pid>/task/<tid>/schedstat`, nanoseconds); undefined when the kernel does not keep it.
 * The utime and stime of `/proc/<pid>/stat` are sampled at each clock tick (every 4 ms here):
 * a process woken for a fraction of a millisecond between a client's requests is charged a whole
 * tick or nothing, depending on where the ticks fall, which misstates a sequential client's load.
 */
function scheduledMs(pid: number): number | undefined {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const first = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0];
    const n = Number(first);
    if (!Number.isFinite(n)) return undefined;
    ns += n;
  }
  return ns / 1e6;
}

/** Milliseconds of CPU (user + system) a process and its descendants used so far; 0 when unknown. */
export function cpuMs(pid: number): number {
  let ms = 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Threads that have exited are counted in stat's figures only; Node's threads live as long as the process.
    ms = scheduledMs(pid) ?? ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
  } catch {
    return 0;
  }
  for (const c of children(pid)) ms += cpuMs(c);
  return ms;
}

/** CPU ms of this process (all threads). */
export function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Process ids to account; `client` absent: this process (autocannon runs in it). */
export type Procs = Partial<Record<"client" | "gateway" | "artifacts" | "nginx", number>>;
export type CpuSnapshot = { client: number; gateway: number; artifacts: number; nginx: number };

export function snapshot(procs: Procs): CpuSnapshot {
  return {
    client: procs.client ? cpuMs(procs.client) : selfCpuMs(),
    gateway: procs.gateway ? cpuMs(procs.gateway) : 0,
    artifacts: procs.artifacts ? cpuMs(procs.artifacts) : 0,
    nginx: procs.nginx ? cpuMs(procs.nginx) : 0,
  };
}

export function cpuDelta(a: CpuSnapshot, b: CpuSnapshot): CpuSnapshot {
  return { client: b.client - a.client, gateway: b.gateway - a.gateway, artifacts: b.artifacts - a.artifacts, nginx: b.nginx - a.nginx };
}

export function cpuSum(a: CpuSnapshot, b: CpuSnapshot): CpuSnapshot {
  return { client: a.client + b.client, gateway: a.gateway + b.gateway, artifacts: a.artifacts + b.artifacts, nginx: a.nginx + b.nginx };
}

/** A field of `/proc/<pid>/status` in KiB (`VmHWM`: peak resident set; `VmRSS`: resident now); undefined when unknown. */
export function statusKiB(pid: number, field: "VmHWM" | "VmRSS"): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts a process's peak resident set (VmHWM) afresh from its resident set now (writing 5 to
 * `/proc/<pid>/clear_refs`, Linux 4.0 and later, a process of the same user); false when it
 * could not, and VmHWM then still counts from the process's start.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}
