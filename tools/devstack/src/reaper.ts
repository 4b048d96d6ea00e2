// A watchdog that outlives the process that started it: whatever that process still had running
// when it died (killed with SIGKILL, or by a parent such as tsx that does not wait for a Ctrl-C to
// be handled) is stopped by its process id.
//
// The reaper is a small process of its own (own process group: a Ctrl-C in the terminal never
// reaches it) reading its standard input, a pipe whose other end only the starting process holds.
// That process tells it, one JSON line each, what to stop and how ("watch") and what it stopped
// itself ("forget"). When the pipe closes, whatever the reason the starting process ended, the
// reaper stops what is still on its list, stage by stage (the services, then the servers they
// use), each by its own sequence of signals, and exits. A process id is signalled only while it
// still names the process that was watched (its start time in /proc is the same).
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** One signal, then how long to wait for the process to end before the next step. */
export type StopStep = [signal: NodeJS.Signals, waitMs: number];

export interface Watched {
  pid: number;
  /** Signal the process group `-pid` (a detached child and everything it started). */
  group?: boolean;
  /** Lower stages are stopped first, each wholly before the next (services 0, servers 1). */
  stage: number;
  steps: StopStep[];
}

interface WatchMessage extends Watched {
  op: "watch";
  key: string;
  /** The process's start time (/proc/<pid>/stat field 22): a reused pid is left alone. */
  start: string | undefined;
}

type Message = WatchMessage | { op: "forget"; key: string };

/** Field 22 of /proc/<pid>/stat (the start time in clock ticks since boot); undefined when gone. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

export interface Reaper {
  /** Puts (or replaces) `key` on the list: stopped if this process dies before forget(key). */
  watch(key: string, w: Watched): void;
  forget(key: string): void;
  /** With nothing left to watch, lets the reaper go (resolves once it has exited); the next watch starts another. */
  idle(): Promise<void>;
}

let shared: { child: ChildProcess; reaper: Reaper } | undefined;

/**
 * This process's reaper, started on first use (`logFile` receives its few lines). Without /proc
 * (not Linux) or when it cannot be started, watching does nothing: the usual stop paths remain.
 */
export function processReaper(logFile?: string): Reaper {
  if (shared && shared.child.exitCode === null && shared.child.signalCode === null) return shared.reaper;
  const fd = logFile ? openSync(logFile, "a", 0o644) : "ignore";
  let child: ChildProcess;
  try {
    // Plain JavaScript, run by node as it is (no TypeScript loader: a tenth of the start-up CPU).
    child = spawn(process.execPath, [fileURLToPath(new URL("./reaper-process.mjs", import.meta.url)), String(process.pid)], {
      detached: true,
      stdio: ["pipe", fd, fd],
    });
  } finally {
    if (typeof fd === "number") closeSync(fd);
  }
  child.on("error", () => {});
  child.stdin?.on("error", () => {});
  // Neither keeps this process alive: the reaper is there for when this process is gone.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  const send = (m: Message) => {
    if (child.stdin?.writable) child.stdin.write(`${JSON.stringify(m)}\n`);
  };
  const keys = new Set<string>();
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const reaper: Reaper = {
    watch: (key, w) => {
      keys.add(key);
      send({ op: "watch", key, start: processStart(w.pid), ...w });
    },
    forget: (key) => {
      if (keys.delete(key)) send({ op: "forget", key });
    },
    async idle() {
      if (keys.size > 0) return;
      if (shared?.child === child) shared = undefined;
      child.stdin?.end();
      // Waited for, so held: unreferenced, this process could end here of an empty event loop
      // (with exit code 0, whatever its caller meant to exit with).
      child.ref();
      await exited;
    },
  };
  shared = { child, reaper };
  return reaper;
}
