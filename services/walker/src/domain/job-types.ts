import type {
  ArtifactMeta,
  ForgetRequest,
  ForgetResult,
  ReclaimBlobsRequest,
  ReclaimBlobsResult,
  RepositorySummary,
  RetentionPolicy,
  RetentionRemoveRequest,
  VerifyBlobRequest,
} from "@svc/contracts";
import type { AbandonedUpload, BlobInfo, StagedInfo } from "@svc/blobs";

/**
 * A walk reads the path index (each repository's metadata pages, from the artifacts service)
 * and the blob store's listing, never a directory tree, and hands what it reads to each job
 * riding along. Jobs act only through WalkActions: changes to artifacts and blobs go to the
 * artifacts service (which owns the index, takes each digest's lock and publishes the events);
 * the walker itself only deletes staged leftovers nobody committed (local-actions.ts).
 */
export const JOB_NAMES = ["retention", "reclaim", "repair", "backfill"] as const;
export type JobName = (typeof JOB_NAMES)[number];
/** "Every job" of the rebuild walk: reclaiming space, repairing the index, back-filling it. */
export const REBUILD_JOBS: readonly JobName[] = ["reclaim", "repair", "backfill"];

export const isJobName = (s: string): s is JobName => (JOB_NAMES as readonly string[]).includes(s);

/** What the artifacts service's index says about a path (a row of its internal metadata page). */
export type MetaInfo = ArtifactMeta;

/** One row of a repository's path index, as the walk hands it to the jobs. */
export interface StoreEntry {
  repository: string;
  path: string;
  meta: MetaInfo;
  /** The blob the row names, or undefined when the store has none; asked once per digest within a page, whichever jobs ask. */
  blob(): Promise<BlobInfo | undefined>;
}

export type { BlobInfo, StagedInfo };
export type { RetentionPolicy };
export type RepositoryInfo = RepositorySummary;

/**
 * Changes are asked of the artifacts service's internal routes, with their requests; the
 * answers are read more loosely than the routes give them, because in read-only mode the
 * walk answers them itself ("read-only") without asking.
 */
export interface WalkActions {
  removeForRetention(a: Omit<RetentionRemoveRequest, "reason">): Promise<{ removed: boolean; size?: number; why?: string }>;
  /** Drops the row of a path whose blob is missing. */
  forget(a: ForgetRequest): Promise<ForgetResult>;
  /** Removes those of the digests no row references and untouched for `olderThanMs`, under each digest's lock. */
  reclaimBlobs(a: ReclaimBlobsRequest): Promise<ReclaimBlobsResult>;
  /** A blob whose bytes do not match its digest: re-checked, and when corrupt removed with its paths. */
  verifyBlob(a: VerifyBlobRequest): Promise<{ outcome: string; forgottenCount: number }>;
  /** The repository's format rebuilds its own index rows for those paths where missing. */
  backfill(repository: string, paths: string[]): Promise<{ filled: number }>;
  /** The repository's format's own step (OCI garbage collection `gc`, image `retention`): counts by name, none when it has no such step. */
  collect(repository: string, step: "gc" | "retention", graceMs: number): Promise<{ counts: Record<string, number> }>;
  /** Deletes a staged leftover if it is still untouched for `olderThanMs`: the bytes freed, or undefined. */
  deleteStaged(name: string, olderThanMs: number): Promise<number | undefined>;
  /** Aborts a multipart upload an object store holds for an upload nobody completed (false: not done). */
  abortUpload(upload: AbandonedUpload): Promise<boolean>;
}

/** What the jobs read of the blob store (never a change: that is WalkActions). */
export interface BlobReader {
  /** SHA-256 (hex) of the blob's bytes as read now, streamed; undefined when it is gone. */
  digestOf(sha256: string): Promise<string | undefined>;
}

export type Counts = Record<string, number>;

/** Adds a format's collection counts to a job's (by name). */
export const addCounts = (to: Counts, from: Record<string, number>): void => {
  for (const [k, n] of Object.entries(from)) to[k] = (to[k] ?? 0) + n;
};

export interface Job {
  readonly name: JobName;
  readonly counts: Counts;
  beginRepository?(repo: RepositoryInfo): void;
  /** Each index row, in byte order of its path. */
  entry?(e: StoreEntry): Promise<void>;
  /**
   * Each page of index rows, after its rows went to `entry`. A page the artifacts service
   * refuses as a whole is handed again one row at a time, so the row at fault is named.
   */
  page?(repository: string, entries: StoreEntry[]): Promise<void>;
  /** After the last row at or under a folder ("" is the repository's own). */
  leaveFolder?(repository: string, folder: string): Promise<void>;
  /** Each staged leftover (an upload nobody committed or discarded). */
  staged?(s: StagedInfo): Promise<void>;
  /** Each multipart upload the object store holds that nobody completed, begun before the walk's bound (none on the filesystem). */
  abandonedUpload?(u: AbandonedUpload): Promise<void>;
  /** Each page of the blob listing, in digest order, before its blobs go to `blob`. */
  blobPage?(blobs: BlobInfo[]): Promise<void>;
  /** Each blob of the listing. */
  blob?(b: BlobInfo): Promise<void>;
}

export interface JobContext {
  actions: WalkActions;
  blobs: BlobReader;
  /** The walk's start: every age is measured from it. */
  now: Date;
  /** svc.storage.reclaim-grace: how long a blob nothing references is left before reclaim removes it. */
  reclaimGraceMs: number;
}

export const parentOf = (path: string): string => {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
};
