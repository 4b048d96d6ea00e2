// CPU time of processes from /proc (Linux), to show where the two cores go during a run.
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";

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

/** Milliseconds of CPU (user + system) a process and its descendants used so far; 0 when unknown. */
export function cpuMs(pid: number): number {
  let ms = 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ms = ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
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
