import { lstat, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { WALK_PROBLEMS_KEPT, type WalkProblem, type WalkProblems } from "@svc/contracts";
import { InternalCallError, digestFile, isBlobName, storeLayout } from "@svc/kit";
import type { BlobEntry, FileInfo, Job, MetaInfo, RepositoryInfo, StoreEntry } from "./job-types.js";

/** Byte order of UTF-8, the order of Postgres' "C" collation the metadata is paged in. */
export const comparePaths = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

type TreeItem = { type: "file"; path: string; file: FileInfo } | { type: "leave"; folder: string; children: number };

/**
 * A repository's folder tree, depth first, files in byte order of their full path: a
 * folder's children are sorted by name, a folder's name with a "/" after it, so "a-b" and
 * "a.txt" come before everything under "a/" and "a0" after it. After a folder's last
 * descendant comes a "leave" marker.
 */
export async function* readTree(dir: string, rel = ""): AsyncGenerator<TreeItem> {
  let names: { name: string; dir: boolean; key: Buffer }[];
  try {
    const dirents = await readdir(dir, { withFileTypes: true });
    names = dirents.map((d) => ({ name: d.name, dir: d.isDirectory(), key: Buffer.from(d.isDirectory() ? `${d.name}/` : d.name) }));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  names.sort((a, b) => Buffer.compare(a.key, b.key));
  for (const n of names) {
    const path = rel ? `${rel}/${n.name}` : n.name;
    const full = join(dir, n.name);
    if (n.dir) {
      yield* readTree(full, path);
      continue;
    }
    // Symbolic links and other special files are never artifacts: left alone.
    const st = await stat(full).catch(() => undefined);
    if (st?.isFile()) yield { type: "file", path, file: { ino: st.ino, size: st.size, mtimeMs: Math.floor(st.mtimeMs) } };
  }
  yield { type: "leave", folder: rel, children: names.length };
}

const namesIn = async (dir: string): Promise<string[]> => (await readdir(dir).catch(() => [] as string[])).sort();

/** Every blob under blobs/sha256/<ab>/, with its link count; names that are not a digest are passed by. */
export async function* readBlobs(sha256Dir: string): AsyncGenerator<BlobEntry> {
  for (const shard of await namesIn(sha256Dir)) {
    if (!/^[0-9a-f]{2}$/.test(shard)) continue;
    for (const name of await namesIn(join(sha256Dir, shard))) {
      if (!isBlobName(name) || !name.startsWith(shard)) continue;
      const st = await lstat(join(sha256Dir, shard, name)).catch(() => undefined);
      if (st?.isFile()) yield { sha256: name, size: st.size, nlink: st.nlink, mtimeMs: st.mtimeMs };
    }
  }
}

export type MergedItem = { type: "entry"; path: string; file?: FileInfo; meta?: MetaInfo } | { type: "leave"; folder: string; children: number };

/** Joins the tree with the metadata (both in byte order): each path once, with what each side knows. */
export async function* mergeWithMetadata(tree: AsyncIterable<TreeItem>, metadata: AsyncIterable<MetaInfo>): AsyncGenerator<MergedItem> {
  const it = metadata[Symbol.asyncIterator]();
  let m = await it.next();
  for await (const item of tree) {
    if (item.type === "leave") {
      yield item;
      continue;
    }
    while (!m.done && comparePaths(m.value.path, item.path) < 0) {
      yield { type: "entry", path: m.value.path, meta: m.value };
      m = await it.next();
    }
    if (!m.done && m.value.path === item.path) {
      yield { type: "entry", path: item.path, file: item.file, meta: m.value };
      m = await it.next();
    } else {
      yield { type: "entry", path: item.path, file: item.file };
    }
  }
  while (!m.done) {
    yield { type: "entry", path: m.value.path, meta: m.value };
    m = await it.next();
  }
}

export interface WalkProgress {
  entries: number;
  bytes: number;
  problems: WalkProblems;
}

/** Runs one step about one entry or repository, recording a failure that belongs to it (isEntryProblem). */
type Guard = (where: { repository: string | null; path: string | null; job?: string }, step: () => Promise<unknown>) => Promise<void>;

export const newProgress = (): WalkProgress => ({ entries: 0, bytes: 0, problems: { count: 0, first: [] } });

/** Refusals that say the caller itself is not let in or should slow down: about the walk, not the entry. */
const WHOLE_WALK_STATUSES = new Set([401, 403, 408, 429]);

/**
 * Whether a failure belongs to one entry, to be recorded and passed by: the artifacts service
 * refusing what was asked about it (a 4xx), or the file system failing on that file or folder.
 * Anything else (the service not answering, a 5xx) fails the walk as before.
 */
export function isEntryProblem(err: unknown): boolean {
  if (err instanceof InternalCallError) return err.status !== undefined && err.status >= 400 && err.status < 500 && !WHOLE_WALK_STATUSES.has(err.status);
  return typeof (err as NodeJS.ErrnoException | undefined)?.syscall === "string";
}

export interface StoreWalkOptions {
  /** svc.filesystem-root, laid out as storeLayout says. */
  root: string;
  repositories: RepositoryInfo[];
  metadata: (repository: string) => AsyncIterable<MetaInfo>;
  jobs: Job[];
  /** Checked between entries: true stops the walk where it is (nothing is half done). */
  shouldStop: () => boolean;
  progress: WalkProgress;
  /** Told of each entry passed by (it is counted in progress.problems too). */
  onProblem?: (problem: WalkProblem, err: unknown) => void;
}

/**
 * One pass over the store: tmp/ first, then the blobs (after tmp/, so a blob whose abandoned
 * upload was just removed is seen unlinked in the same walk), then each repository's tree
 * joined with its metadata, every entry handed to every job in turn. Each file is read at most once (for its digest),
 * whichever jobs need it.
 */
export async function walkStore(o: StoreWalkOptions): Promise<"complete" | "stopped"> {
  const layout = storeLayout(o.root);
  /** Runs one step about one entry; a failure that belongs to the entry is recorded and the walk goes on. */
  const guarded: Guard = async (where, step) => {
    try {
      await step();
    } catch (err) {
      if (!isEntryProblem(err)) throw err;
      const problem = { repository: where.repository, path: where.path, detail: `${where.job ? `${where.job}: ` : ""}${(err as Error).message}` };
      o.progress.problems.count++;
      if (o.progress.problems.first.length < WALK_PROBLEMS_KEPT) o.progress.problems.first.push(problem);
      o.onProblem?.(problem, err);
    }
  };
  const tempJobs = o.jobs.filter((j) => j.temp);
  if (tempJobs.length) {
    const names = await readdir(layout.tmpDir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      if (o.shouldStop()) return "stopped";
      const st = await stat(layout.tmpFile(name)).catch(() => undefined);
      if (!st?.isFile()) continue;
      for (const j of tempJobs) await guarded({ repository: null, path: `tmp/${name}`, job: j.name }, () => j.temp!({ name, size: st.size, mtimeMs: st.mtimeMs }));
    }
  }
  const blobJobs = o.jobs.filter((j) => j.blob);
  if (blobJobs.length) {
    for await (const b of readBlobs(layout.sha256Dir)) {
      if (o.shouldStop()) return "stopped";
      for (const j of blobJobs) await guarded({ repository: null, path: `blobs/sha256/${b.sha256}`, job: j.name }, () => j.blob!(b));
    }
  }
  for (const repo of o.repositories) {
    let stopped = false;
    // A repository whose metadata or folders cannot be read is recorded and passed by; the others are walked.
    await guarded({ repository: repo.name, path: null }, async () => {
      stopped = (await walkRepository(o, repo, guarded)) === "stopped";
    });
    if (stopped) return "stopped";
  }
  return "complete";
}

async function walkRepository(o: StoreWalkOptions, repo: RepositoryInfo, guarded: Guard): Promise<"complete" | "stopped"> {
  const layout = storeLayout(o.root);
  const dir = layout.repositoryDir(repo.name);
  for (const j of o.jobs) j.beginRepository?.(repo);
  for await (const item of mergeWithMetadata(readTree(dir), o.metadata(repo.name))) {
    if (o.shouldStop()) return "stopped";
    if (item.type === "leave") {
      for (const j of o.jobs) if (j.leaveFolder) await guarded({ repository: repo.name, path: item.folder || null, job: j.name }, () => j.leaveFolder!(repo.name, item.folder, item.children));
      continue;
    }
    let digest: Promise<string | undefined> | undefined;
    const entry: StoreEntry = {
      repository: repo.name,
      path: item.path,
      file: item.file,
      meta: item.meta,
      // A file removed meanwhile (a client's DELETE) has no digest: the jobs pass it by.
      sha256: () =>
        (digest ??= digestFile(layout.pathOf(repo.name, item.path.split("/"))).then(
          (d) => d.sha256,
          (err: NodeJS.ErrnoException) => {
            if (err.code === "ENOENT") return undefined;
            throw err;
          },
        )),
    };
    o.progress.entries++;
    if (item.file) o.progress.bytes += item.file.size;
    for (const j of o.jobs) if (j.entry) await guarded({ repository: repo.name, path: item.path, job: j.name }, () => j.entry!(entry));
  }
  return "complete";
}
