import type {
  ArtifactMeta,
  ForgetRequest,
  ForgetResult,
  IndexRequest,
  RepositorySummary,
  RetentionPolicy,
  RetentionRemoveRequest,
} from "@svc/contracts";

/**
 * A walk reads the store once and hands every entry to each job riding along. Jobs act only
 * through WalkActions: changes to artifacts go to the artifacts service (which owns the
 * metadata and publishes the events); the walker itself only deletes abandoned uploads in
 * tmp/, empty folders and blobs no artifact links to any more (local-actions.ts).
 */
export const JOB_NAMES = ["retention", "reclaim", "repair", "backfill"] as const;
export type JobName = (typeof JOB_NAMES)[number];
/** "Every job" of the rebuild walk: reclaiming space, repairing the index, back-filling it. */
export const REBUILD_JOBS: readonly JobName[] = ["reclaim", "repair", "backfill"];

export const isJobName = (s: string): s is JobName => (JOB_NAMES as readonly string[]).includes(s);

/** A file on disk as the walk saw it (the identity the artifacts service re-checks). */
export interface FileInfo {
  ino: number;
  size: number;
  mtimeMs: number;
}

/** What the artifacts service's metadata says about a path (a row of its internal metadata page). */
export type MetaInfo = ArtifactMeta;

/** One path of a repository: on disk, in the metadata, or both. */
export interface StoreEntry {
  repository: string;
  path: string;
  file?: FileInfo;
  meta?: MetaInfo;
  /** SHA-256 (hex) of the file, read once per walk whichever jobs ask; undefined when it is gone. */
  sha256(): Promise<string | undefined>;
}

export interface TempEntry {
  name: string;
  size: number;
  mtimeMs: number;
}

/** A blob under blobs/sha256/ as the walk saw it: its link count is its reference count plus one. */
export interface BlobEntry {
  sha256: string;
  size: number;
  nlink: number;
  mtimeMs: number;
}

export type { RetentionPolicy };
export type RepositoryInfo = RepositorySummary;

/**
 * Artifact changes are asked of the artifacts service's internal routes, with their requests;
 * the answers are read more loosely than the routes give them, because in read-only mode the
 * walk answers them itself ("read-only") without asking.
 */
export interface WalkActions {
  removeForRetention(a: Omit<RetentionRemoveRequest, "reason">): Promise<{ removed: boolean; size?: number; why?: string }>;
  index(a: IndexRequest): Promise<{ outcome: string }>;
  forget(a: ForgetRequest): Promise<ForgetResult>;
  /** Deletes tmp/<name> if it is still untouched for `olderThanMs`: the bytes freed, or undefined. */
  removeTemp(name: string, olderThanMs: number): Promise<number | undefined>;
  /** Removes an empty folder if still empty and untouched for `olderThanMs`; true when removed. */
  removeEmptyFolder(repository: string, folder: string, olderThanMs: number): Promise<boolean>;
  /** Deletes the blob of `sha256` if still linked from nothing and untouched for `olderThanMs`: the bytes freed, or undefined. */
  removeBlob(sha256: string, olderThanMs: number): Promise<number | undefined>;
}

export type Counts = Record<string, number>;

export interface Job {
  readonly name: JobName;
  readonly counts: Counts;
  beginRepository?(repo: RepositoryInfo): void;
  entry?(e: StoreEntry): Promise<void>;
  /** After every entry of a folder (and its subfolders) was seen; `children` as listed. */
  leaveFolder?(repository: string, folder: string, children: number): Promise<void>;
  temp?(t: TempEntry): Promise<void>;
  blob?(b: BlobEntry): Promise<void>;
}

export interface JobContext {
  actions: WalkActions;
  /** The walk's start: every age is measured from it. */
  now: Date;
}

export const parentOf = (path: string): string => {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
};
