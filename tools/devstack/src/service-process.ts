import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { serviceNodeOptions } from "./runtime.js";
import { bundleLauncher, freshBundle } from "./service-bundle.js";

/**
 * One service of services/ as a child process: the one supervisor that `npm start`
 * (scripts/suite.ts), the e2e tests and the bench (service-runner.ts) start, watch and stop
 * services through.
 */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/**
 * The command line a service runs with: its bundle when one is fresh (service-bundle.ts; the
 * tests, npm start and the bench build them as they start), else main.ts through tsx, which is
 * the command deploy/ runs from the image's /app.
 */
/**
 * Whether a service run from its bundle maps stack traces to the sources (`--enable-source-maps`):
 * yes unless SVC_SOURCE_MAPS=0. It costs: Node 20 reads the bundle's map at start and maps every
 * stack trace made (a service makes many: each refusal is an Error), about a fifth of a service's
 * start-up CPU and more under traffic. `npm test` turns it off (test-e2e/setup.ts); a failure
 * being chased is run again with SVC_SOURCE_MAPS=1 for the sources' lines.
 */
export const sourceMapsWanted = (env: NodeJS.ProcessEnv = process.env): boolean => env.SVC_SOURCE_MAPS !== "0";

export function serviceCommand(name: string, nodeArgs: readonly string[] = []): { command: string; args: string[] } {
  const bundle = freshBundle(name);
  const v8 = serviceNodeOptions(name);
  if (bundle) return { command: process.execPath, args: [...v8, ...(sourceMapsWanted() ? ["--enable-source-maps"] : []), ...nodeArgs, bundleLauncher, bundle] };
  return { command: process.execPath, args: [...v8, ...nodeArgs, "--import", "tsx", join(repoRoot, "services", name, "src", "main.ts")] };
}

export interface ServiceProcessOptions {
  /** The service's folder name under services/. */
  name: string;
  env: NodeJS.ProcessEnv;
  /** Arguments after main.ts (`-Dsvc.x=y`). */
  args?: readonly string[];
  /** Node options before `--import tsx` (e.g. `--cpu-prof`). */
  nodeArgs?: readonly string[];
  /**
   * Own process group, signalled as a whole: a Ctrl-C in the terminal then reaches only the
   * supervisor, which stops the services before the servers they use.
   */
  detached?: boolean;
  /** Every output line, as it comes. */
  onLine?: (line: string, stream: "stdout" | "stderr") => void;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number | undefined;
  /** Whether it has exited (and its last output lines have been passed on). */
  readonly exited: boolean;
  /** Resolves once it has exited, after its last output lines (the reason for a refusal comes just before exit). */
  readonly exit: Promise<Exit>;
  /** Resolves once GET <url>/health/live answers 200; rejects if it exits first, `abort()` says so, or time runs out. */
  waitLive(url: string, timeoutMs: number, abort?: () => boolean): Promise<void>;
  /** Sends a signal (to its whole process group when detached); nothing once it has exited. */
  kill(signal: NodeJS.Signals): void;
  /** Sends `signal` and resolves with its exit code; SIGKILL after `graceMs`. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
}

export function spawnService(opts: ServiceProcessOptions): ServiceProcess {
  const { command, args } = serviceCommand(opts.name, opts.nodeArgs);
  const child = spawn(command, [...args, ...(opts.args ?? [])], {
    cwd: repoRoot,
    env: opts.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: opts.detached ?? false,
  });
  // Each output line wakes waitLive: a service prints a line as it starts listening, so polling
  // between lines (every 100 ms, about fifty refused connections a service on a busy machine,
  // each an error with its stack) is left for one that prints nothing.
  let printed: () => void = () => {};
  for (const [stream, from] of [["stdout", child.stdout], ["stderr", child.stderr]] as const) {
    createInterface({ input: from, crlfDelay: Infinity }).on("line", (line) => {
      opts.onLine?.(line, stream);
      printed();
    });
  }
  let exited = false;
  const exit = new Promise<Exit>((res) => {
    const finish = (e: Exit) => {
      if (exited) return;
      exited = true;
      res(e);
    };
    child.once("exit", (code, signal) => {
      child.once("close", () => finish({ code, signal }));
      setTimeout(() => finish({ code, signal }), 500).unref();
    });
    child.once("error", (err) => {
      opts.onLine?.(`could not start: ${err.message}`, "stderr");
      finish({ code: 127, signal: null });
    });
  });

  const kill = (signal: NodeJS.Signals) => {
    if (exited || child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    try {
      if (opts.detached) process.kill(-child.pid, signal);
      else child.kill(signal);
    } catch {
      try {
        child.kill(signal);
      } catch {
        // gone
      }
    }
  };

  return {
    name: opts.name,
    child,
    pid: child.pid,
    get exited() {
      return exited;
    },
    exit,
    async waitLive(url, timeoutMs, abort) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (exited || child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`exited with ${child.exitCode ?? child.signalCode ?? "an error"} before it was ready`);
        }
        if (abort?.()) throw new Error("stopped before it was ready");
        const ok = await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(2000) }).then(
          async (r) => {
            await r.body?.cancel();
            return r.status === 200;
          },
          () => false,
        );
        if (ok) return;
        if (Date.now() > deadline) throw new Error(`did not answer GET /health/live within ${timeoutMs / 1000} s`);
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((res) => {
          printed = res;
          timer = setTimeout(res, 1000);
        });
        clearTimeout(timer);
        printed = () => {};
      }
    },
    kill,
    async stop(signal = "SIGTERM", graceMs = 10_000) {
      if (!exited) {
        kill(signal);
        let timer: NodeJS.Timeout | undefined;
        const inTime = await Promise.race([exit.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
        clearTimeout(timer);
        if (!inTime) kill("SIGKILL");
      }
      return (await exit).code;
    },
  };
}
