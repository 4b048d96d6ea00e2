import { WALK_PROBLEMS_KEPT, type WalkProblem, type WalkProblems } from "@svc/contracts";
import type { BlobStore } from "@svc/blobs";
import { InternalCallError } from "@svc/kit";
import { parentOf, type BlobInfo, type Job, type MetaInfo, type RepositoryInfo, type StoreEntry } from "./job-types.js";

/** A multipart upload begun this long ago and not completed was abandoned (as a staged leftover: jobs/reclaim.ts). */
export const ABANDONED_AFTER_MS = 3_600_000;
/** Abandoned multipart uploads listed per walk, at most. */
const ABANDONED_PER_WALK = 10_000;

/** Byte order of UTF-8, the order of Postgres' "C" collation the index is paged in. */
export const comparePaths = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Blobs asked of the store's listing at a time (also the most digests one reclaim call carries). */
export const BLOB_PAGE = 1000;

export interface WalkProgress {
  /** Index rows seen. */
  entries: number;
  /** Bytes the index rows seen hold. */
  bytes: number;
  /** Blobs of the store's listing seen (only listed when a job rides along that wants them). */
  blobs: number;
  problems: WalkProblems;
}

/** Runs one step about one entry or repository, recording a failure that belongs to it (isEntryProblem). */
type Guard = (where: { repository: string | null; path: string | null; job?: string }, step: () => Promise<unknown>) => Promise<boolean>;

export const newProgress = (): WalkProgress => ({ entries: 0, bytes: 0, blobs: 0, problems: { count: 0, first: [] } });

/** Refusals that say the caller itself is not let in or should slow down: about the walk, not the entry. */
const WHOLE_WALK_STATUSES = new Set([401, 403, 408, 429]);

/**
 * Whether a failure belongs to one entry, to be recorded and passed by: the artifacts service
 * refusing what was asked about it (a 4xx), or the blob store failing on that one blob (a
 * file system error). Anything else (the service not answering, a 5xx) fails the walk as before.
 */
export function isEntryProblem(err: unknown): boolean {
  if (err instanceof InternalCallError) return err.status !== undefined && err.status >= 400 && err.status < 500 && !WHOLE_WALK_STATUSES.has(err.status);
  return typeof (err as NodeJS.ErrnoException | undefined)?.syscall === "string";
}

export interface StoreWalkOptions {
  /** What the walk reads of the blob store: its listing, its staged leftovers, a blob's head. */
  blobs: Pick<BlobStore, "list" | "listStaged" | "head" | "listAbandonedUploads">;
  repositories: RepositoryInfo[];
  /** A repository's index rows in byte order of the path, a page at a time. */
  metadata: (repository: string) => AsyncIterable<MetaInfo[]>;
  jobs: Job[];
  /** Checked between entries: true stops the walk where it is (nothing is half done). */
  shouldStop: () => boolean;
  progress: WalkProgress;
  /** Told of each entry passed by (it is counted in progress.problems too). */
  onProblem?: (problem: WalkProblem, err: unknown) => void;
  /** Blobs and staged leftovers per listing call; BLOB_PAGE unless a test says otherwise. */
  pageSize?: number;
}

/**
 * One pass over the store, flat in memory whatever its size (a page of the index or of the
 * listing at a time, never the whole of either): the staged leftovers first, then the blob
 * listing (after the leftovers, so content whose abandoned upload was just removed is seen
 * in the same walk), then each repository's index, every row handed to every job in turn.
 * Each blob is read at most once (by repair, for its digest); a row's blob is asked of the
 * store once per digest within a page, whichever jobs ask.
 */
export async function walkStore(o: StoreWalkOptions): Promise<"complete" | "stopped"> {
  const pageSize = o.pageSize ?? BLOB_PAGE;
  /** Runs one step about one entry; a failure that belongs to the entry is recorded and the walk goes on. */
  const guarded: Guard = async (where, step) => {
    try {
      await step();
      return true;
    } catch (err) {
      if (!isEntryProblem(err)) throw err;
      const problem = { repository: where.repository, path: where.path, detail: `${where.job ? `${where.job}: ` : ""}${(err as Error).message}` };
      o.progress.problems.count++;
      if (o.progress.problems.first.length < WALK_PROBLEMS_KEPT) o.progress.problems.first.push(problem);
      o.onProblem?.(problem, err);
      return false;
    }
  };
  const stagedJobs = o.jobs.filter((j) => j.staged);
  if (stagedJobs.length) {
    for (let after: string | undefined; ; ) {
      const page = await o.blobs.listStaged({ after, limit: pageSize });
      for (const s of page) {
        if (o.shouldStop()) return "stopped";
        for (const j of stagedJobs) await guarded({ repository: null, path: `staged/${s.name}`, job: j.name }, () => j.staged!(s));
      }
      if (page.length < pageSize) break;
      after = page[page.length - 1]!.name;
    }
  }
  // An object store's multipart uploads nobody completed (a crash, a cut upload), begun before
  // the bound: one listing of at most ABANDONED_PER_WALK a walk (the next walk takes the rest).
  const uploadJobs = o.jobs.filter((j) => j.abandonedUpload);
  if (uploadJobs.length && o.blobs.listAbandonedUploads) {
    for (const u of await o.blobs.listAbandonedUploads({ olderThanMs: ABANDONED_AFTER_MS, limit: ABANDONED_PER_WALK })) {
      if (o.shouldStop()) return "stopped";
      for (const j of uploadJobs) await guarded({ repository: null, path: `uploads/${u.key}`, job: j.name }, () => j.abandonedUpload!(u));
    }
  }
  const blobJobs = o.jobs.filter((j) => j.blob || j.blobPage);
  if (blobJobs.length) {
    for (let after: string | undefined; ; ) {
      if (o.shouldStop()) return "stopped";
      const page: BlobInfo[] = await o.blobs.list({ after, limit: pageSize });
      if (page.length === 0) break;
      o.progress.blobs += page.length;
      const where = { repository: null, path: `blobs ${page[0]!.sha256}..${page[page.length - 1]!.sha256}` };
      for (const j of blobJobs) if (j.blobPage) await guarded({ ...where, job: j.name }, () => j.blobPage!(page));
      for (const b of page) {
        if (o.shouldStop()) return "stopped";
        for (const j of blobJobs) if (j.blob) await guarded({ repository: null, path: `blobs/sha256/${b.sha256}`, job: j.name }, () => j.blob!(b));
      }
      if (page.length < pageSize) break;
      after = page[page.length - 1]!.sha256;
    }
  }
  for (const repo of o.repositories) {
    let stopped = false;
    // A repository whose index cannot be read is recorded and passed by; the others are walked.
    await guarded({ repository: repo.name, path: null }, async () => {
      stopped = (await walkRepository(o, repo, guarded)) === "stopped";
    });
    if (stopped) return "stopped";
  }
  return "complete";
}

/**
 * The folders open at the current path, outermost first: every path at or under a folder
 * comes in one run in byte order ("a/" is a prefix), so a folder is left when a path arrives
 * that is not under it.
 */
function folderTracker(leave: (folder: string) => Promise<void>) {
  const open: string[] = [];
  const under = (folder: string, inner: string) => folder === "" || inner === folder || inner.startsWith(`${folder}/`);
  return {
    async enter(path: string) {
      const folder = parentOf(path);
      while (open.length && !under(open[open.length - 1]!, folder)) await leave(open.pop()!);
      const chain: string[] = [];
      for (let f = folder; ; f = parentOf(f)) {
        if (open.length && open[open.length - 1] === f) break;
        chain.push(f);
        if (f === "") break;
      }
      open.push(...chain.reverse());
    },
    async leaveAll() {
      while (open.length) await leave(open.pop()!);
    },
  };
}

async function walkRepository(o: StoreWalkOptions, repo: RepositoryInfo, guarded: Guard): Promise<"complete" | "stopped"> {
  for (const j of o.jobs) j.beginRepository?.(repo);
  const folderJobs = o.jobs.filter((j) => j.leaveFolder);
  const folders = folderTracker(async (folder) => {
    for (const j of folderJobs) await guarded({ repository: repo.name, path: folder || null, job: j.name }, () => j.leaveFolder!(repo.name, folder));
  });
  for await (const rows of o.metadata(repo.name)) {
    // A row's blob is asked once per digest within the page, whichever jobs ask.
    const heads = new Map<string, Promise<BlobInfo | undefined>>();
    const page: StoreEntry[] = [];
    for (const meta of rows) {
      if (o.shouldStop()) return "stopped";
      const entry: StoreEntry = { repository: repo.name, path: meta.path, meta, blob: () => lookup(heads, meta.sha256, () => o.blobs.head(meta.sha256)) };
      page.push(entry);
      o.progress.entries++;
      o.progress.bytes += meta.size;
      if (folderJobs.length) await folders.enter(meta.path);
      for (const j of o.jobs) if (j.entry) await guarded({ repository: repo.name, path: meta.path, job: j.name }, () => j.entry!(entry));
    }
    for (const j of o.jobs) if (j.page && page.length) await pageGuarded(guarded, j, repo.name, page);
  }
  await folders.leaveAll();
  return "complete";
}

const lookup = <T>(cache: Map<string, Promise<T>>, key: string, ask: () => Promise<T>): Promise<T> => {
  let p = cache.get(key);
  if (!p) cache.set(key, (p = ask()));
  return p;
};

/** A page refused as a whole (a 4xx about one of its paths) is handed again a row at a time, so the row at fault is named and the others are done. */
async function pageGuarded(guarded: Guard, j: Job, repository: string, page: StoreEntry[]): Promise<void> {
  if (page.length === 1) {
    await guarded({ repository, path: page[0]!.path, job: j.name }, () => j.page!(repository, page));
    return;
  }
  let refused = false;
  try {
    await j.page!(repository, page);
  } catch (err) {
    if (!isEntryProblem(err)) throw err;
    refused = true;
  }
  if (refused) for (const e of page) await guarded({ repository, path: e.path, job: j.name }, () => j.page!(repository, [e]));
}
