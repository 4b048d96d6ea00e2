import type { Logger } from "pino";
import type { Walk, WalkStore } from "../store/walk-store.js";
import { nextRun } from "./cron.js";
import { isJobName, type JobName } from "./job-types.js";
import { describeBusy, type WalkRunner } from "./walk-runner.js";

export interface SchedulerDeps {
  store: Pick<WalkStore, "enabledWalks" | "claimFire" | "markInterrupted" | "skipRun">;
  /** This process, named on the record of an instant it skipped. */
  holder: string;
  runner: Pick<WalkRunner, "beginTogether">;
  log: Pick<Logger, "info" | "warn">;
  /** How often walk definitions are re-read (edits through another replica). */
  reloadEveryMs?: number;
  now?: () => Date;
}

/**
 * Fires walks on their schedules. Every replica computes the same instants; for each one the
 * first replica to claim it in the database runs it, so an instant runs once cluster-wide.
 * An instant missed while no replica was up is not made up: the walk runs at its next one.
 */
export function schedulerFactory(deps: SchedulerDeps) {
  const reloadEveryMs = deps.reloadEveryMs ?? 5000;
  const now = deps.now ?? (() => new Date());
  const plans = new Map<string, { schedule: string; next: Date }>();
  let walks: Walk[] = [];
  let lastLoad = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /**
   * Walks due at one instant go over the store together, in one pass (the ones this replica
   * claimed). When another walk holds the store the instant is skipped, not queued: each
   * claimed walk gets a `skipped` record naming the walk that held it, and runs at its next
   * instant (or by hand).
   */
  const fire = async (due: Walk[], at: Date) => {
    const claimed: Walk[] = [];
    for (const w of due) if (await deps.store.claimFire(w.name, w.schedule, at)) claimed.push(w);
    if (claimed.length === 0) return;
    const r = await deps.runner.beginTogether(
      claimed.map((w) => ({ walk: w.name, jobs: w.jobs.filter(isJobName) as JobName[] })),
      "schedule",
      at,
    );
    if (r.started.length > 0 || !r.busy) return;
    const detail = `skipped: ${describeBusy(r.busy)}`;
    for (const w of claimed) {
      deps.log.info({ walk: w.name, scheduledFor: at.toISOString(), heldBy: r.busy.walk, heldByRun: r.busy.run }, `walk ${w.name} skipped at ${at.toISOString()}: ${describeBusy(r.busy)}`);
      await deps.store.skipRun({ walk: w.name, scheduledFor: at, holder: deps.holder, jobs: w.jobs, detail });
    }
  };

  const tick = async () => {
    const t = now();
    if (t.getTime() - lastLoad >= reloadEveryMs) {
      walks = await deps.store.enabledWalks();
      lastLoad = t.getTime();
      await deps.store.markInterrupted();
      const names = new Set(walks.map((w) => w.name));
      for (const n of [...plans.keys()]) if (!names.has(n)) plans.delete(n);
    }
    const dueAt = new Map<number, Walk[]>();
    for (const w of walks) {
      let plan = plans.get(w.name);
      if (!plan || plan.schedule !== w.schedule) {
        plan = { schedule: w.schedule, next: nextRun(w.schedule, t) };
        plans.set(w.name, plan);
      }
      if (plan.next.getTime() <= t.getTime()) {
        const at = plan.next.getTime();
        // Skip instants this process slept through rather than firing them in a burst.
        plan.next = nextRun(w.schedule, t);
        dueAt.set(at, [...(dueAt.get(at) ?? []), w]);
      }
    }
    for (const [at, due] of dueAt) {
      fire(due, new Date(at)).catch((err) => deps.log.warn({ err, walks: due.map((w) => w.name) }, "could not start a scheduled walk"));
    }
  };

  const arm = () => {
    if (stopped) return;
    const t = now().getTime();
    let wait = reloadEveryMs - (t - lastLoad);
    for (const p of plans.values()) wait = Math.min(wait, p.next.getTime() - t);
    timer = setTimeout(loop, Math.max(20, wait));
  };
  let ticking = false;
  const loop = () => {
    ticking = true;
    tick()
      .catch((err) => deps.log.warn({ err }, "walk scheduler tick failed"))
      .finally(() => {
        ticking = false;
        arm();
      });
  };

  return {
    start() {
      loop();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    /** Re-reads the walk definitions at once (after a change made through this process). */
    reload() {
      lastLoad = 0;
      if (ticking || stopped) return;
      if (timer) clearTimeout(timer);
      loop();
    },
    /** For tests: one pass now. */
    tick,
    nextRuns: () => new Map([...plans].map(([k, v]) => [k, v.next])),
  };
}
export type Scheduler = ReturnType<typeof schedulerFactory>;
