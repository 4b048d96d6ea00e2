/**
 * The walks API's answers as a caller reads them (`GET /api/walks`, `GET /api/walks/<name>`,
 * `GET /api/walks/<name>/runs`, `POST /api/walks/run`): the walker's routes answer these shapes,
 * the console and the `svc` CLI read them (the CLI takes the types only, so its bundle stays
 * without dependencies). Times are ISO 8601 strings in UTC.
 */
export type WalkOutcome = "running" | "succeeded" | "failed" | "interrupted" | "skipped";

/** A walk's run: started by its schedule or by a person ("walk the store now"). */
export interface WalkRunView {
  id: string;
  walk: string;
  trigger: "schedule" | "manual";
  /** The scheduled instant a scheduled run was for; null for a manual run. */
  scheduledFor: string | null;
  started: string;
  ended: string | null;
  outcome: WalkOutcome;
  jobs: string[];
  /** Per job, per count name, a number: `{ "retention": { "removed": 3 } }`. */
  counts: Record<string, Record<string, number>>;
  /** Index rows the walk saw. */
  entries: number;
  /** Bytes the index rows it saw hold. */
  bytes: number;
  /** Blobs of the store's listing it saw (listed only when reclaim or repair rides along). */
  blobs: number;
  /** How long the run took (so far, while running), in milliseconds; null when it never went over the store (a skipped instant). */
  durationMs: number | null;
  /** The node that held the store's lease for the run. */
  node: string;
  /** The failure reference of a failed run, to find it in the walker's log. */
  reference: string | null;
  detail: string | null;
  /**
   * Entries the walk could not handle and passed by (a path another service refuses, a file it
   * could not read): how many, and the first few with why. The walk goes on past each.
   */
  problems: WalkProblems;
}

/** One entry a walk passed by: its repository (null for tmp/ and blobs), its path, and why. */
export interface WalkProblem {
  repository: string | null;
  path: string | null;
  detail: string;
}

export interface WalkProblems {
  count: number;
  /** The first ones met, at most WALK_PROBLEMS_KEPT. */
  first: WalkProblem[];
}

/** How many of a run's problems its record keeps (the count goes on). */
export const WALK_PROBLEMS_KEPT = 50;

export interface WalkView {
  name: string;
  /** Six fields, seconds first, in UTC. */
  schedule: string;
  enabled: boolean;
  jobs: string[];
  /** Null when the walk is switched off. */
  nextRun: string | null;
  lastRun: WalkRunView | null;
}
