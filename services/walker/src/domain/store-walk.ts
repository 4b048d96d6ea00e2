import { lstat, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { digestFile, isBlobName, storeLayout } from "@svc/kit";
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
}

/**
 * One pass over the store: tmp/ first, then the blobs (after tmp/, so a blob whose abandoned
 * upload was just removed is seen unlinked in the same walk), then each repository's tree
 * joined with its metadata, every entry handed to every job in turn. Each file is read at most once (for its digest),
 * whichever jobs need it.
 */
export async function walkStore(o: StoreWalkOptions): Promise<"complete" | "stopped"> {
  const layout = storeLayout(o.root);
  const tempJobs = o.jobs.filter((j) => j.temp);
  if (tempJobs.length) {
    const names = await readdir(layout.tmpDir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      if (o.shouldStop()) return "stopped";
      const st = await stat(layout.tmpFile(name)).catch(() => undefined);
      if (!st?.isFile()) continue;
      for (const j of tempJobs) await j.temp!({ name, size: st.size, mtimeMs: st.mtimeMs });
    }
  }
  const blobJobs = o.jobs.filter((j) => j.blob);
  if (blobJobs.length) {
    for await (const b of readBlobs(layout.sha256Dir)) {
      if (o.shouldStop()) return "stopped";
      for (const j of blobJobs) await j.blob!(b);
    }
  }
  for (const repo of o.repositories) {
    const dir = layout.repositoryDir(repo.name);
    for (const j of o.jobs) j.beginRepository?.(repo);
    for await (const item of mergeWithMetadata(readTree(dir), o.metadata(repo.name))) {
      if (o.shouldStop()) return "stopped";
      if (item.type === "leave") {
        for (const j of o.jobs) await j.leaveFolder?.(repo.name, item.folder, item.children);
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
      for (const j of o.jobs) await j.entry?.(entry);
    }
  }
  return "complete";
}
