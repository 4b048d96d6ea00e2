import { sleep } from "./process.js";
import type { Exit, ServiceProcess } from "./service-process.js";

/**
 * Keeps one service of `npm start` running: a process that exits while the suite runs is started
 * again after a back-off, the way Kubernetes restarts a container (1 s, 2 s, 4 s … up to
 * `maxDelayMs`, back to 1 s once a run has lasted `resetAfterMs`). A crash loop, the only reason
 * to give up, is `crashLoopLimit` exits in a row, each within `resetAfterMs` of its start: by then
 * waiting longer would only hide a service that cannot run (a bad setting, a broken checkout).
 */
export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  resetAfterMs: number;
  crashLoopLimit: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { initialDelayMs: 1000, maxDelayMs: 30_000, resetAfterMs: 60_000, crashLoopLimit: 5 };

export type RestartDecision = { restart: true; delayMs: number; crashes: number } | { restart: false; crashes: number };

/** The back-off bookkeeping alone: `onExit(ranMs)` says whether and when to start again. */
export function restartBackoff(policy: RestartPolicy = DEFAULT_RESTART_POLICY): { onExit(ranMs: number): RestartDecision } {
  let crashes = 0;
  return {
    onExit(ranMs) {
      // A run that lasted was healthy: this exit starts a new count.
      crashes = ranMs >= policy.resetAfterMs ? 1 : crashes + 1;
      if (crashes >= policy.crashLoopLimit) return { restart: false, crashes };
      return { restart: true, delayMs: Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (crashes - 1)), crashes };
    },
  };
}

export interface SupervisorOptions {
  name: string;
  /** Starts one process of the service (same port and settings each time). */
  spawn(): ServiceProcess;
  /** Where GET /health/live answers once a restarted process is up. */
  url: string;
  policy?: RestartPolicy;
  /** False while the suite is starting or stopping: an exit then is not restarted but reported. */
  mayRestart(): boolean;
  log: { info(line: string): void; warn(line: string): void };
  /** An exit that is not restarted (start-up, or a crash loop); `crashLoop` tells which. */
  onGiveUp(exit: Exit, crashLoop: boolean): void;
  /** Every new process (the suite keeps its pid file current). */
  onSpawn?(proc: ServiceProcess): void;
}

export interface SupervisedService {
  readonly name: string;
  /** The current process (a new one after each restart). */
  readonly current: ServiceProcess;
  /** No more restarts; signals the current process (SIGTERM, SIGKILL after `graceMs`) and waits for it. */
  stop(graceMs: number): Promise<void>;
  /** No more restarts; signals the current process at once. */
  kill(signal: NodeJS.Signals): void;
}

const describeExit = ({ code, signal }: Exit) => (signal ? `signal ${signal}` : `exit code ${code}`);

export function superviseService(opts: SupervisorOptions): SupervisedService {
  const backoff = restartBackoff(opts.policy);
  let stopped = false;
  let current: ServiceProcess;
  let wake: (() => void) | undefined;

  const watch = (proc: ServiceProcess, startedAt: number) => {
    void proc.exit.then(async (exit) => {
      if (stopped) return;
      if (!opts.mayRestart()) return opts.onGiveUp(exit, false);
      const decision = backoff.onExit(Date.now() - startedAt);
      if (!decision.restart) {
        opts.log.warn(`${opts.name} exited with ${describeExit(exit)}: ${decision.crashes} crashes in a row, each within ${(opts.policy ?? DEFAULT_RESTART_POLICY).resetAfterMs / 1000} s of its start (a crash loop); giving up`);
        return opts.onGiveUp(exit, true);
      }
      opts.log.warn(`${opts.name} exited unexpectedly with ${describeExit(exit)}; restarting it in ${decision.delayMs / 1000} s (crash ${decision.crashes} in a row)`);
      // A stop during the wait ends it at once rather than after the back-off.
      await Promise.race([sleep(decision.delayMs), new Promise<void>((r) => (wake = r))]);
      wake = undefined;
      if (stopped || !opts.mayRestart()) return;
      launch();
      opts.log.info(`${opts.name} restarted (pid ${current.pid ?? "?"})`);
      const restarted = current;
      restarted.waitLive(opts.url, (opts.policy ?? DEFAULT_RESTART_POLICY).resetAfterMs, () => stopped).then(
        () => opts.log.info(`${opts.name} is live again`),
        () => {
          // its exit, if that is why, is handled by its own watch
        },
      );
    });
  };

  const launch = () => {
    current = opts.spawn();
    opts.onSpawn?.(current);
    watch(current, Date.now());
  };
  launch();

  return {
    name: opts.name,
    get current() {
      return current;
    },
    async stop(graceMs) {
      stopped = true;
      wake?.();
      await current.stop("SIGTERM", graceMs);
    },
    kill(signal) {
      stopped = true;
      wake?.();
      current.kill(signal);
    },
  };
}
