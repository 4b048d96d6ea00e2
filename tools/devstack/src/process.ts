import type { ChildProcess } from "node:child_process";
import { openSync, readFileSync, readlinkSync, realpathSync, writeSync } from "node:fs";
import { resolve } from "node:path";

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether a process with this id exists (one of another user counts: signalling it is refused, not absent). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether a process with this id runs: alive and not a zombie (ended, its parent has not waited for it yet; an init that never does keeps it so). */
export function pidRunning(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/**
 * Sends `signal` to a child and resolves with its exit code once it has exited; a child still
 * running after `graceMs` is killed. A child that already exited resolves at once.
 */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill(signal);
  });
}

export function tailOf(file: string, lines = 30): string {
  try {
    const text = readFileSync(file, "utf8");
    return text.split(/\r?\n/).filter((l) => l.length > 0).slice(-lines).join("\n");
  } catch {
    return "(no log output)";
  }
}


export function procCmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return undefined;
  }
}

export function procCwd(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

export function samePath(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return resolve(p);
    }
  };
  return real(a) === real(b);
}

export function readPidFile(file: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(file, "utf8").split(/\s+/)[0] ?? "", 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}


export function openLog(file: string, what: string): number {
  const fd = openSync(file, "a", 0o644);
  writeSync(fd, `\n===== ${what} ${new Date().toISOString()} =====\n`);
  return fd;
}

