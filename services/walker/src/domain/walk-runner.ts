import type { Logger } from "pino";
import { newReference } from "@svc/kit";
import type { RunRecord, WalkStore } from "../store/walk-store.js";
import type { JobName, MetaInfo, RepositoryInfo, WalkActions } from "./job-types.js";
import { makeJobs } from "./jobs/index.js";
import type { LeaseManager } from "./lease.js";
import { walkStore, type WalkProgress } from "./store-walk.js";
import type { WalkMetrics } from "./walk-metrics.js";

export interface WalkSource {
  repositories(): Promise<RepositoryInfo[]>;
  metadata(repository: string): AsyncIterable<MetaInfo>;
}

export interface WalkRunnerDeps {
  store: Pick<WalkStore, "startRun" | "progress" | "finishRun" | "markInterrupted" | "pruneRuns">;
  leases: Pick<LeaseManager, "acquire" | "holder">;
  source: WalkSource;
  actions: WalkActions;
  root: string;
  log: Logger;
  metrics: WalkMetrics;
  /** svc.read-only: the jobs look and count but change nothing. */
  readOnly: boolean;
  progressEveryMs?: number;
  /** Run records kept per walk. */
  keepRuns?: number;
}

/** Stand-ins for a frozen store: every action answers "not done". */
const frozen: WalkActions = {
  removeForRetention: async () => ({ removed: false, why: "read-only" }),
  index: async () => ({ outcome: "read-only" }),
  forget: async () => ({ forgotten: false }),
  removeTemp: async () => undefined,
  removeEmptyFolder: async () => false,
};

type Lease = { lost(): boolean; release(): Promise<void> };

/**
 * Runs walks: takes the walk's lease (one run cluster-wide), leaves a run record, walks the
 * store once with every job riding along, keeps the record and the meters up to date while it
 * goes, and ends the record as succeeded, failed (with a failure reference) or interrupted.
 * Walks begun together (due at the same instant) share one pass over the store: the jobs of all
 * of them ride along, each walk still gets its own run record with its own jobs' counts.
 */
export function walkRunnerFactory(deps: WalkRunnerDeps) {
  const running = new Map<string, Promise<void>>();
  let stopping = false;

  const execute = async (group: { run: RunRecord; lease: Lease }[]) => {
    const names = [...new Set(group.flatMap((g) => g.run.jobs))] as JobName[];
    const jobs = makeJobs(names, { actions: deps.readOnly ? frozen : deps.actions, now: new Date() });
    const progress: WalkProgress = { entries: 0, bytes: 0 };
    const snapshot = (run: RunRecord) => ({
      counts: Object.fromEntries(jobs.filter((j) => run.jobs.includes(j.name)).map((j) => [j.name, { ...j.counts }])),
      entries: progress.entries,
      bytes: progress.bytes,
    });
    const walks = group.map((g) => g.run.walk).join("+");
    for (const g of group) deps.metrics.start(g.run.walk);
    const timer = setInterval(() => {
      for (const { run } of group) {
        const s = snapshot(run);
        deps.metrics.progress(run.walk, s);
        deps.store.progress(run.id, s).catch((err) => deps.log.warn({ err, walk: run.walk }, "could not record walk progress"));
      }
    }, deps.progressEveryMs ?? 2000);
    timer.unref();
    let outcome: "succeeded" | "failed" | "interrupted" = "succeeded";
    let reference: string | null = null;
    try {
      const repositories = await deps.source.repositories();
      const r = await walkStore({ root: deps.root, repositories, metadata: deps.source.metadata, jobs, progress, shouldStop: () => stopping || group.some((g) => g.lease.lost()) });
      if (r === "stopped") outcome = "interrupted";
    } catch (err) {
      outcome = "failed";
      reference = newReference();
      deps.log.error({ err, reference, walk: walks, runs: group.map((g) => g.run.id) }, `Unexpected failure ${reference} while walking ${walks}`);
    } finally {
      clearInterval(timer);
    }
    for (const { run, lease } of group) {
      const s = snapshot(run);
      deps.metrics.progress(run.walk, s);
      deps.metrics.end(run.walk, outcome);
      try {
        await deps.store.finishRun(run.id, { outcome, reference, ...s });
        await deps.store.pruneRuns(run.walk, deps.keepRuns ?? 1000);
      } catch (err) {
        deps.log.warn({ err, walk: run.walk, run: run.id }, "could not record the end of a walk; it will show as interrupted");
      }
      await lease.release();
      deps.log.info({ walk: run.walk, run: run.id, outcome, entries: s.entries, bytes: s.bytes, counts: s.counts, ...(group.length > 1 ? { sharedWith: walks } : {}) }, "walk ended");
    }
  };

  /**
   * Starts the given walks in one pass over the store, leaving out any that runs somewhere
   * already. Resolves once their run records exist (empty when none could start); `done`
   * settles when the pass ends.
   */
  const beginTogether = async (
    walks: readonly { walk: string; jobs: readonly JobName[] }[],
    trigger: "schedule" | "manual",
    scheduledFor: Date | null,
  ): Promise<{ run: RunRecord; done: Promise<void> }[]> => {
    const group: { run: RunRecord; lease: Lease }[] = [];
    const releaseAll = () => Promise.all(group.map((g) => g.lease.release()));
    for (const { walk, jobs } of walks) {
      if (stopping || running.has(walk) || group.some((g) => g.run.walk === walk)) continue;
      const lease = await deps.leases.acquire(walk);
      if (!lease) continue;
      try {
        // A record left "running" by a holder that died is closed before ours opens.
        await deps.store.markInterrupted();
        const run = await deps.store.startRun({ walk, trigger, scheduledFor, holder: deps.leases.holder, jobs: [...jobs] });
        group.push({ run, lease });
      } catch (err) {
        await lease.release();
        await releaseAll();
        throw err;
      }
    }
    if (group.length === 0) return [];
    for (const { run } of group) deps.log.info({ walk: run.walk, run: run.id, trigger, jobs: run.jobs, ...(group.length > 1 ? { sharedWith: group.map((g) => g.run.walk).join("+") } : {}) }, "walk started");
    const done = execute(group).finally(() => {
      for (const { run } of group) running.delete(run.walk);
    });
    for (const { run } of group) running.set(run.walk, done);
    return group.map(({ run }) => ({ run, done }));
  };

  return {
    /**
     * Starts a walk unless it runs somewhere already (then undefined). Resolves once the run
     * record exists; `done` settles when the walk ends.
     */
    async begin(walk: string, jobs: readonly JobName[], trigger: "schedule" | "manual", scheduledFor: Date | null): Promise<{ run: RunRecord; done: Promise<void> } | undefined> {
      return (await beginTogether([{ walk, jobs }], trigger, scheduledFor))[0];
    },
    beginTogether,
    running: () => [...running.keys()],
    /** Stops every walk between two entries (recorded as interrupted) and waits for them. */
    async stop() {
      stopping = true;
      await Promise.allSettled([...running.values()]);
    },
  };
}
export type WalkRunner = ReturnType<typeof walkRunnerFactory>;
