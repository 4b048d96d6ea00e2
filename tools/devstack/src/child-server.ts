// Redis and NATS as plain child processes of ours: started, probed until ready, stopped, and
// one left over from a crashed earlier run (same data folder) stopped first.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, closeSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openLog, pidAlive, procCmdline, procCwd, readPidFile, samePath, sleep, tailOf } from "./process.js";
import type { StopStep } from "./reaper.js";

/** What differs between the servers run this way. */
export interface ServerSpec {
  name: "redis" | "nats";
  args(port: number, dir: string, configFile: string): string[];
  /**
   * The server's config file (mode 0600): the password goes there, never on the command line,
   * where every user of the machine could read it.
   */
  config(password: string): string;
  /** Whether the server answers; `newLog` is what it logged since this start. */
  ready(port: number, newLog: () => string, password: string): Promise<boolean>;
}

export interface ChildState {
  spec: ServerSpec;
  name: "redis" | "nats";
  bin: string;
  port: number;
  dir: string;
  logFile: string;
  pidFile: string;
  /** Every client must give it (local-secrets.ts keeps it in the data folder). */
  password: string;
  child: ChildProcess | undefined;
  exited: Promise<void> | undefined;
  /** Called when a running server (past start-up) exits without childStop asking it to. */
  onUnexpectedExit?: (how: string) => void;
}

/** How the reaper (reaper.ts) stops a server of ours whose parent died: as childStop does. */
export const CHILD_STOP_STEPS: StopStep[] = [["SIGTERM", 10_000], ["SIGKILL", 0]];


/** Kills a server of ours left over from a crashed earlier run (same data folder). */
export async function killStale(st: ChildState, log: (l: string) => void): Promise<void> {
  const pid = readPidFile(st.pidFile);
  if (pid === undefined) return;
  // redis-server rewrites its process title; both servers run with their data folder as cwd.
  const cwd = procCwd(pid);
  const cmd = procCmdline(pid) ?? "";
  const ours = pidAlive(pid) && ((cwd !== undefined && samePath(cwd, st.dir)) || cmd.includes(st.dir)) && cmd.includes(st.name === "redis" ? "redis" : "nats");
  if (ours) {
    log(`[infra] stopping ${st.name} (pid ${pid}) left over from a previous run`);
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      /* gone */
    }
    const deadline = Date.now() + 5000;
    while (pidAlive(pid) && Date.now() < deadline) await sleep(100);
    if (pidAlive(pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone */
      }
      while (pidAlive(pid)) await sleep(50);
    }
  }
  rmSync(st.pidFile, { force: true });
}

export async function childStart(st: ChildState, detached: boolean, timeoutMs: number): Promise<void> {
  mkdirSync(st.dir, { recursive: true });
  const configFile = join(st.dir, `${st.name}.conf`);
  writeFileSync(configFile, st.spec.config(st.password), { mode: 0o600 });
  chmodSync(configFile, 0o600);
  const fd = openLog(st.logFile, `${st.name} start (port ${st.port})`);
  const logStart = statSync(st.logFile).size;
  let child: ChildProcess;
  try {
    child = spawn(st.bin, st.spec.args(st.port, st.dir, configFile), { cwd: st.dir, stdio: ["ignore", fd, fd], detached, env: process.env });
  } finally {
    closeSync(fd);
  }
  let exitInfo: string | undefined;
  let started = false;
  st.child = child;
  st.exited = new Promise<void>((r) => {
    child.once("exit", (code, signal) => {
      exitInfo = signal ? `signal ${signal}` : `exit code ${code}`;
      // Not asked to stop (childStop clears st.child first): a death to report.
      const unexpected = started && st.child === child;
      if (st.child === child) st.child = undefined;
      r();
      if (unexpected) st.onUnexpectedExit?.(exitInfo);
    });
  });
  child.once("error", (err) => {
    exitInfo = err.message;
  });
  if (child.pid !== undefined) writeFileSync(st.pidFile, `${child.pid}\n`);
  const deadline = Date.now() + timeoutMs;
  const newLog = () => {
    try {
      return readFileSync(st.logFile, "utf8").slice(logStart);
    } catch {
      return "";
    }
  };
  for (;;) {
    if (exitInfo !== undefined) {
      st.child = undefined;
      rmSync(st.pidFile, { force: true });
      throw new Error(`${st.name} exited during start-up (${exitInfo}) on 127.0.0.1:${st.port}. Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
    }
    const ok = await st.spec.ready(st.port, newLog, st.password);
    if (ok && exitInfo === undefined) {
      started = true;
      return;
    }
    if (Date.now() > deadline) {
      await childStop(st);
      throw new Error(`${st.name} was not ready on 127.0.0.1:${st.port} after ${Math.round(timeoutMs / 1000)} s. Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
    }
    await sleep(100);
  }
}

export async function childStop(st: ChildState): Promise<void> {
  const child = st.child;
  if (!child || !st.exited) return;
  st.child = undefined; // asked to: not an unexpected exit
  try {
    child.kill("SIGTERM");
  } catch {
    /* gone */
  }
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    st.exited.then(() => true),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 10_000))),
  ]);
  clearTimeout(timer);
  if (!done) {
    try {
      child.kill("SIGKILL");
    } catch {
      /* gone */
    }
    await st.exited;
  }
  st.child = undefined;
  rmSync(st.pidFile, { force: true });
}
