import { conflict, invalid, notFound } from "@svc/contracts";
import type { RunRecord, Walk, WalkStore } from "../store/walk-store.js";
import { checkSchedule, nextRun } from "./cron.js";
import { JOB_NAMES, REBUILD_JOBS, isJobName, type JobName } from "./job-types.js";
import { describeBusy, type WalkRunner } from "./walk-runner.js";

export const WALK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** `POST /api/walks/run` is "walk the store now", so no walk may be called "run". */
const RESERVED = new Set(["run"]);
export const REBUILD = "rebuild";

export interface WalkView extends Walk {
  nextRun: Date | null;
  lastRun: RunRecord | null;
}

export interface WalkServiceDeps {
  store: Pick<WalkStore, "listWalks" | "getWalk" | "addWalk" | "updateWalk" | "removeWalk" | "listRuns" | "hasRuns" | "lastRuns">;
  runner: Pick<WalkRunner, "begin">;
  /** Tells the scheduler a definition changed. */
  changed: () => void;
  now?: () => Date;
}

function checkedSchedule(schedule: string): string {
  const c = checkSchedule(schedule);
  if (!c.ok) throw invalid("schedule", `"${schedule}" is not a valid schedule: ${c.reason}`);
  return schedule.trim().split(/\s+/).join(" ");
}

function checkedJobs(jobs: string[]): JobName[] {
  if (jobs.length === 0) throw invalid("jobs", `a walk needs at least one job (${JOB_NAMES.join(", ")})`);
  const unknown = jobs.filter((j) => !isJobName(j));
  if (unknown.length) throw invalid("jobs", `unknown job ${unknown.map((j) => `"${j}"`).join(", ")}; jobs are ${JOB_NAMES.join(", ")}`);
  return [...new Set(jobs)] as JobName[];
}

/** Walk definitions and "walk the store now", for the admin routes. */
export function walkServiceFactory(deps: WalkServiceDeps) {
  const now = deps.now ?? (() => new Date());
  const view = (w: Walk, last: RunRecord | undefined): WalkView => ({ ...w, nextRun: w.enabled ? nextRun(w.schedule, now()) : null, lastRun: last ?? null });
  const start = async (walk: string, jobs: readonly JobName[]): Promise<RunRecord> => {
    const r = await deps.runner.begin(walk, jobs, "manual", null);
    if (!r.started) {
      throw conflict(r.busy ? `the store is being walked already: ${describeBusy(r.busy)}; one walk goes over the store at a time, try again once it has ended` : "the walker is stopping; try again on another replica or once it is back");
    }
    return r.started.run;
  };

  return {
    async list(page: { after?: string; limit: number }): Promise<{ items: WalkView[]; next?: string }> {
      const walks = await deps.store.listWalks(page.after, page.limit + 1);
      const items = walks.slice(0, page.limit);
      const last = await deps.store.lastRuns(items.map((w) => w.name));
      return { items: items.map((w) => view(w, last.get(w.name))), next: walks.length > page.limit ? items[items.length - 1]!.name : undefined };
    },
    async get(name: string): Promise<WalkView> {
      const w = await deps.store.getWalk(name);
      if (!w) throw notFound(`no walk named ${name}`);
      return view(w, (await deps.store.lastRuns([name])).get(name));
    },
    /** With `dryRun`, checks the walk and answers it as it would be, without adding it (the console's preview). */
    async add(input: { name: string; schedule: string; enabled?: boolean; jobs: string[] }, opts: { dryRun?: boolean } = {}): Promise<WalkView> {
      if (!WALK_NAME.test(input.name) || RESERVED.has(input.name)) {
        throw invalid("name", "a walk name is 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit, and not \"run\"");
      }
      const walk: Walk = { name: input.name, schedule: checkedSchedule(input.schedule), enabled: input.enabled ?? true, jobs: checkedJobs(input.jobs) };
      const taken = () => conflict(`a walk named ${input.name} exists already`);
      if (opts.dryRun) {
        if (await deps.store.getWalk(walk.name)) throw taken();
        return view(walk, undefined);
      }
      if (!(await deps.store.addWalk(walk))) throw taken();
      deps.changed();
      return view(walk, undefined);
    },
    /** With `dryRun`, checks the change and answers the walk as it would be, without saving it. */
    async edit(name: string, change: { schedule?: string; enabled?: boolean; jobs?: string[] }, opts: { dryRun?: boolean } = {}): Promise<WalkView> {
      const set: Partial<Omit<Walk, "name">> = {};
      if (change.schedule !== undefined) set.schedule = checkedSchedule(change.schedule);
      if (change.jobs !== undefined) set.jobs = checkedJobs(change.jobs);
      if (change.enabled !== undefined) set.enabled = change.enabled;
      if (opts.dryRun) {
        const current = await deps.store.getWalk(name);
        if (!current) throw notFound(`no walk named ${name}`);
        return view({ ...current, ...set }, (await deps.store.lastRuns([name])).get(name));
      }
      const w = await deps.store.updateWalk(name, set);
      if (!w) throw notFound(`no walk named ${name}`);
      deps.changed();
      return view(w, (await deps.store.lastRuns([name])).get(name));
    },
    async remove(name: string): Promise<void> {
      if (!(await deps.store.removeWalk(name))) throw notFound(`no walk named ${name}`);
      deps.changed();
    },
    async runs(name: string, page: { after?: string; limit: number }): Promise<{ items: RunRecord[]; next?: string }> {
      if (page.after !== undefined && !/^\d{1,18}$/.test(page.after)) throw invalid("after", "after must be a run id");
      if (!(await deps.store.getWalk(name)) && !(await deps.store.hasRuns(name))) throw notFound(`no walk named ${name}`);
      const runs = await deps.store.listRuns(name, page.after, page.limit + 1);
      const items = runs.slice(0, page.limit);
      return { items, next: runs.length > page.limit ? items[items.length - 1]!.id : undefined };
    },
    /**
     * Walk the store now: the rebuild walk with the jobs it names (so a rebuild walk naming one
     * job carries that job alone), or every rebuild job when there is no rebuild walk.
     */
    async runNow(): Promise<RunRecord> {
      const rebuild = await deps.store.getWalk(REBUILD);
      const jobs = rebuild ? (rebuild.jobs.filter(isJobName) as JobName[]) : [...REBUILD_JOBS];
      return start(REBUILD, jobs.length ? jobs : REBUILD_JOBS);
    },
    /** Runs one walk now, whatever its schedule and enabled flag say. */
    async runWalk(name: string): Promise<RunRecord> {
      const w = await deps.store.getWalk(name);
      if (!w) throw notFound(`no walk named ${name}`);
      return start(w.name, w.jobs.filter(isJobName) as JobName[]);
    },
  };
}
export type WalkService = ReturnType<typeof walkServiceFactory>;
