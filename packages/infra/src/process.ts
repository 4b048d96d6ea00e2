import type { ChildProcess } from "node:child_process";

/** Whether a process with this id exists (one of another user counts: signalling it is refused, not absent). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
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
