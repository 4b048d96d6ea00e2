import type { Logger } from "pino";
import type { BlobStore } from "@svc/blobs";
import { newReference } from "@svc/kit";
import { STORE_LEASE } from "../store/schema.js";
import type { RunRecord, WalkStore } from "../store/walk-store.js";
import type { JobName, MetaInfo, RepositoryInfo, WalkActions } from "./job-types.js";
import { makeJobs } from "./jobs/index.js";
import type { LeaseManager } from "./lease.js";
import { localActionsFactory } from "./local-actions.js";
import { newProgress, walkStore } from "./store-walk.js";
import type { WalkMetrics } from "./walk-metrics.js";

export interface WalkSource {
  repositories(): Promise<RepositoryInfo[]>;
  /** A repository's index rows in byte order of the path, a page at a time. */
  metadata(repository: string): AsyncIterable<MetaInfo[]>;
}

export interface WalkRunnerDeps {
  store: Pick<WalkStore, "startRun" | "progress" | "finishRun" | "markInterrupted" | "pruneRuns" | "runningRuns">;
  leases: Pick<LeaseManager, "acquire" | "holder">;
  source: WalkSource;
  /** The artifacts service's internal routes (the walker's own change, deleting staged leftovers, is made here). */
  actions: Omit<WalkActions, "deleteStaged" | "abortUpload">;
  /** The store the artifacts service writes, read here (listing, heads, bytes). */
  blobs: Pick<BlobStore, "list" | "listStaged" | "head" | "get" | "deleteStaged" | "listAbandonedUploads" | "abortUpload">;
  /** svc.storage.reclaim-grace. */
  reclaimGraceMs: number;
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
  forget: async () => ({ forgotten: false }),
  reclaimBlobs: async () => ({ removed: [] }),
  verifyBlob: async () => ({ outcome: "read-only", forgottenCount: 0 }),
  backfill: async () => ({ filled: 0 }),
  collect: async () => ({ counts: {} }),
  deleteStaged: async () => undefined,
  abortUpload: async () => false,
};

type Lease = { lost(): boolean; release(): Promise<void> };
type Started = { run: RunRecord; done: Promise<void> };
/** `opened` settles once the pass's run records exist (or it failed to open). */
type Pass = { walks: string[]; runs: RunRecord[]; since: Date; opened: Promise<void>; done?: Promise<void> };

/** What holds the store when a walk cannot start: the walk and run going over it, when known. */
export interface Busy {
  walk: string | null;
  run: string | null;
  node: string | null;
  since: Date | null;
}

/** Names the walk that holds the store, for a 409 or a skipped instant's record. */
export function describeBusy(b: Busy): string {
  if (!b.walk) return "another walk is starting over the store";
  const about = [b.run ? `run ${b.run}` : undefined, b.node ? `on ${b.node}` : undefined, b.since ? `since ${b.since.toISOString()}` : undefined].filter(Boolean).join(", ");
  return `walk ${b.walk} is going over the store${about ? ` (${about})` : ""}`;
}

/**
 * Runs walks: takes the store's lease (one walk over the store at a time cluster-wide, whichever
 * walk), leaves a run record, walks the store once with every job riding along, keeps the
 * record and the meters up to date while it goes, and ends the record as succeeded, failed
 * (with a failure reference) or interrupted.
 * Walks begun together (due at the same instant) share one pass over the store: the jobs of all
 * of them ride along, each walk still gets its own run record with its own jobs' counts.
 */
export function walkRunnerFactory(deps: WalkRunnerDeps) {
  /** The pass this process runs, set before the first await so a second caller here sees it. */
  let current: Pass | null = null;
  let stopping = false;

  const execute = async (group: RunRecord[], lease: Lease) => {
    const names = [...new Set(group.flatMap((g) => g.jobs))] as JobName[];
    const local = localActionsFactory(deps.blobs);
    const actions: WalkActions = deps.readOnly ? frozen : { ...deps.actions, deleteStaged: local.deleteStaged, abortUpload: local.abortUpload };
    const jobs = makeJobs(names, { actions, blobs: local, now: new Date(), reclaimGraceMs: deps.reclaimGraceMs });
    const progress = newProgress();
    const began = performance.now();
    const snapshot = (run: RunRecord) => ({
      counts: Object.fromEntries(jobs.filter((j) => run.jobs.includes(j.name)).map((j) => [j.name, { ...j.counts }])),
      entries: progress.entries,
      bytes: progress.bytes,
      blobs: progress.blobs,
      durationMs: Math.round(performance.now() - began),
      problems: { count: progress.problems.count, first: [...progress.problems.first] },
    });
    const walks = group.map((run) => run.walk).join("+");
    for (const run of group) deps.metrics.start(run.walk);
    const timer = setInterval(() => {
      for (const run of group) {
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
      const r = await walkStore({
        blobs: deps.blobs,
        repositories,
        metadata: deps.source.metadata,
        jobs,
        progress,
        shouldStop: () => stopping || lease.lost(),
        onProblem: (problem, err) => deps.log.warn({ err, walk: walks, repository: problem.repository, path: problem.path }, "walk passed an entry by: it is recorded on the run"),
      });
      if (r === "stopped") outcome = "interrupted";
    } catch (err) {
      outcome = "failed";
      reference = newReference();
      deps.log.error({ err, reference, walk: walks, runs: group.map((run) => run.id) }, `Unexpected failure ${reference} while walking ${walks}`);
    } finally {
      clearInterval(timer);
    }
    for (const run of group) {
      const s = snapshot(run);
      deps.metrics.progress(run.walk, s);
      deps.metrics.end(run.walk, outcome);
      try {
        await deps.store.finishRun(run.id, { outcome, reference, ...s });
        await deps.store.pruneRuns(run.walk, deps.keepRuns ?? 1000);
      } catch (err) {
        deps.log.warn({ err, walk: run.walk, run: run.id }, "could not record the end of a walk; it will show as interrupted");
      }
      deps.log.info({ walk: run.walk, run: run.id, outcome, entries: s.entries, bytes: s.bytes, blobs: s.blobs, durationMs: s.durationMs, counts: s.counts, problems: s.problems.count, ...(group.length > 1 ? { sharedWith: walks } : {}) }, "walk ended");
    }
    // Released only once every record is closed, so records of successive walks never overlap.
    await lease.release();
  };

  /** Who holds the store: this process's pass, or the run record of the lease's holder elsewhere. */
  const whoHolds = async (): Promise<Busy> => {
    const pass = current;
    if (pass) {
      await pass.opened;
      const run = pass.runs[0];
      return { walk: pass.walks.join("+"), run: run?.id ?? null, node: deps.leases.holder, since: run?.started ?? pass.since };
    }
    const run = (await deps.store.runningRuns().catch(() => []))[0];
    return run ? { walk: run.walk, run: run.id, node: run.holder, since: run.started } : { walk: null, run: null, node: null, since: null };
  };

  /**
   * Starts the given walks in one pass over the store, unless a walk goes over the store
   * already (here or elsewhere): then nothing starts and `busy` says which walk holds it.
   * Resolves once the run records exist; `done` settles when the pass ends.
   */
  const beginTogether = async (
    walks: readonly { walk: string; jobs: readonly JobName[] }[],
    trigger: "schedule" | "manual",
    scheduledFor: Date | null,
  ): Promise<{ started: Started[]; busy: Busy | null }> => {
    const unique = walks.filter((w, i) => walks.findIndex((x) => x.walk === w.walk) === i);
    if (stopping || unique.length === 0) return { started: [], busy: null };
    if (current) return { started: [], busy: await whoHolds() };
    let opened = () => {};
    const pass: Pass = { walks: unique.map((w) => w.walk), runs: [], since: new Date(), opened: new Promise<void>((r) => (opened = r)) };
    current = pass;
    let lease: Lease | undefined;
    try {
      lease = await deps.leases.acquire(STORE_LEASE);
      if (!lease || stopping) {
        current = null;
        opened();
        await lease?.release();
        return { started: [], busy: lease ? null : await whoHolds() };
      }
      // A record left "running" by a holder that died is closed before ours opens.
      await deps.store.markInterrupted();
      for (const { walk, jobs } of unique) pass.runs.push(await deps.store.startRun({ walk, trigger, scheduledFor, holder: deps.leases.holder, jobs: [...jobs] }));
    } catch (err) {
      // Records already opened are closed by markInterrupted once the lease is gone.
      current = null;
      opened();
      await lease?.release();
      throw err;
    }
    opened();
    const group = pass.runs;
    for (const run of group) deps.log.info({ walk: run.walk, run: run.id, trigger, jobs: run.jobs, ...(group.length > 1 ? { sharedWith: group.map((r) => r.walk).join("+") } : {}) }, "walk started");
    const done = execute(group, lease).finally(() => {
      if (current === pass) current = null;
    });
    pass.done = done;
    return { started: group.map((run) => ({ run, done })), busy: null };
  };

  return {
    /**
     * Starts a walk unless a walk goes over the store already (then `busy` names it). Resolves
     * once the run record exists; `done` settles when the walk ends.
     */
    async begin(walk: string, jobs: readonly JobName[], trigger: "schedule" | "manual", scheduledFor: Date | null): Promise<{ started: Started | undefined; busy: Busy | null }> {
      const r = await beginTogether([{ walk, jobs }], trigger, scheduledFor);
      return { started: r.started[0], busy: r.busy };
    },
    beginTogether,
    running: () => current?.walks ?? [],
    /** Stops the walk between two entries (recorded as interrupted) and waits for it. */
    async stop() {
      stopping = true;
      await current?.done?.catch(() => undefined);
    },
  };
}
export type WalkRunner = ReturnType<typeof walkRunnerFactory>;
