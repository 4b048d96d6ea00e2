import { createWriteStream } from "node:fs";
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { conflict, forbidden } from "@svc/contracts";
import { digestFile, digestingStream, storeLayout, type ContentDigest } from "@svc/kit";

/**
 * The filesystem store, laid out as storeLayout says (the walker walks the same layout).
 * A write streams into tmp/ (same filesystem), is flushed to disk, then renamed into place
 * and the directory entry flushed: a crash leaves the old content or none, never half a file.
 * The read-only switch is enforced here too, so nothing inside the service bypasses it.
 */
export interface FileStoreOptions {
  root: string;
  readOnly: boolean;
}

/** An upload written to tmp/ and flushed, not yet visible. */
export interface Staged {
  tmp: string;
  size: number;
  sha256: string;
}

/** One version of a file on disk: a write renames a new inode into place. */
export interface FileIdentity {
  ino: number;
  size: number;
  /** Whole milliseconds. */
  mtimeMs: number;
  /** The modification time as HTTP sees it (Date of the stat: rounded, not cut), for the ETag a GET answers. */
  httpMtimeMs?: number;
}

export interface WriteResult {
  size: number;
  sha256: string;
  created: boolean;
}

const READ_ONLY = "this server is read-only (svc.read-only): writes are refused";

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export function fileStoreFactory(opts: FileStoreOptions) {
  const layout = storeLayout(opts.root);
  const { tmpDir, repositoryDir: repoDir } = layout;
  const fileOf = (repository: string, segments: string[]) => layout.pathOf(repository, segments);

  /** Streams an upload into tmp/ (flushed to disk), hashing it on the way; `through` see it first. */
  const stage = async (source: Readable, through: readonly Transform[] = []): Promise<Staged> => {
    if (opts.readOnly) throw forbidden(READ_ONLY);
    const tmp = layout.newTmpFile();
    const meter = digestingStream();
    try {
      await pipeline([source, ...through, meter.stream, createWriteStream(tmp, { flags: "wx", mode: 0o644, flush: true })]);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
    return { tmp, ...meter.digest() };
  };

  /** Renames a staged upload into place and flushes the folder entry. */
  const place = async (staged: Staged, repository: string, segments: string[]): Promise<{ created: boolean }> => {
    if (opts.readOnly) throw forbidden(READ_ONLY);
    const target = fileOf(repository, segments);
    const parent = join(target, "..");
    const makeParent = async () => {
      try {
        await mkdir(parent, { recursive: true });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOTDIR" || code === "EEXIST") throw conflict("a parent of this path is a file, not a folder");
        throw err;
      }
    };
    await makeParent();
    const before = await stat(target).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return undefined;
      if (err.code === "ENOTDIR") throw conflict("a parent of this path is a file, not a folder");
      throw err;
    });
    if (before?.isDirectory()) throw conflict("this path is a folder of other artifacts");
    try {
      await rename(staged.tmp, target);
    } catch (err) {
      // A walk may have tidied away an empty parent folder between mkdir and rename.
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      await makeParent();
      await rename(staged.tmp, target);
    }
    await syncDir(parent);
    return { created: before === undefined };
  };

  const discard = async (staged: Staged): Promise<void> => {
    await rm(staged.tmp, { force: true }).catch(() => {});
  };

  return {
    readOnly: opts.readOnly,
    repoDir,
    fileOf,
    stage,
    place,
    discard,

    async init(repositories: string[]): Promise<void> {
      await mkdir(tmpDir, { recursive: true });
      for (const r of repositories) await mkdir(repoDir(r), { recursive: true });
      // Leftovers of uploads a crash interrupted more than a day ago (other replicas may be writing now).
      const cutoff = Date.now() - 86_400_000;
      for (const name of await readdir(tmpDir)) {
        const p = layout.tmpFile(name);
        const st = await stat(p).catch(() => undefined);
        if (st && st.mtimeMs < cutoff) await rm(p, { force: true });
      }
    },

    /** stage + place in one call (no metadata, no event). */
    async write(repository: string, segments: string[], source: Readable): Promise<WriteResult> {
      const staged = await stage(source);
      try {
        const { created } = await place(staged, repository, segments);
        return { size: staged.size, sha256: staged.sha256, created };
      } catch (err) {
        await discard(staged);
        throw err;
      }
    },

    /** The regular file at a path, or undefined (absent, a folder, or through a file). */
    async identity(repository: string, segments: string[]): Promise<FileIdentity | undefined> {
      const st = await stat(fileOf(repository, segments)).catch(() => undefined);
      if (!st || !st.isFile()) return undefined;
      return { ino: st.ino, size: st.size, mtimeMs: Math.floor(st.mtimeMs), httpMtimeMs: st.mtime.getTime() };
    },

    /** Reads a stored file through once: its size and SHA-256 (hex). */
    hash: (repository: string, segments: string[]): Promise<ContentDigest> => digestFile(fileOf(repository, segments)),

    /** Removes a file; false when there was none. Empty parent folders are tidied up. */
    async remove(repository: string, segments: string[]): Promise<boolean> {
      if (opts.readOnly) throw forbidden(READ_ONLY);
      const target = fileOf(repository, segments);
      const st = await stat(target).catch(() => undefined);
      if (!st || !st.isFile()) return false;
      try {
        await unlink(target);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
        throw err;
      }
      for (let i = segments.length - 1; i > 0; i--) {
        try {
          await rmdir(fileOf(repository, segments.slice(0, i)));
        } catch {
          break; // not empty, or gone already
        }
      }
      await syncDir(join(target, "..")).catch(() => {});
      return true;
    },
  };
}

export type FileStore = ReturnType<typeof fileStoreFactory>;
