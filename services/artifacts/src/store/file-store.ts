import { createHash } from "node:crypto";
import { constants, createWriteStream, type Stats } from "node:fs";
import { link, mkdir, open, readdir, rename, rm, rmdir, stat, unlink, utimes } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Readable, type Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { conflict, forbidden } from "@svc/contracts";
import { digestFile, digestingStream, storeLayout, type ContentDigest } from "@svc/kit";

/**
 * The filesystem store, laid out as storeLayout says (the walker walks the same layout).
 * A write streams into tmp/ (same filesystem), is flushed to disk, then renamed into place
 * and the directory entry flushed: a crash leaves the old content or none, never half a file.
 * The read-only switch is enforced here too, so nothing inside the service bypasses it.
 *
 * Content is stored once per digest: the staged file is hard-linked as blobs/sha256/<ab>/<hex>
 * (or, when that blob exists, the blob is linked instead and the upload dropped) before it is
 * renamed into place. The filesystem's link count is the reference count: a removal that
 * leaves a blob with no other link removes the blob. A blob and a path racing (a removal
 * dropping the blob while a publish links it) cost at worst a second copy, never content.
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

/** A staged upload linked to its blob, ready to rename into place (file-store.ts prepare). */
export interface Prepared {
  staged: Staged;
  /** The file renamed into place: the staged upload, or a new link to the blob of its content. */
  source: string;
  identity: FileIdentity;
  /** Whether the staged upload became its content's blob (not when that blob existed, or links are not to be had). */
  blobbed: boolean;
  placed: boolean;
}

/** A file renamed into place. */
export interface Placed {
  created: boolean;
  identity: FileIdentity;
  /** Resolves once the folder entry is on disk: await it before saying the file is stored. */
  flushed: Promise<void>;
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

/** A new file, written durably: O_DSYNC where the system has it (else the writer flushes it). */
const WRITE_DURABLY = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_DSYNC ?? 0);

const identityOf = (st: Stats): FileIdentity => ({ ino: st.ino, size: st.size, mtimeMs: Math.floor(st.mtimeMs), httpMtimeMs: st.mtime.getTime() });

export function fileStoreFactory(opts: FileStoreOptions) {
  const layout = storeLayout(opts.root);
  const { tmpDir, repositoryDir: repoDir } = layout;
  const fileOf = (repository: string, segments: string[]) => layout.pathOf(repository, segments);

  /**
   * Writes an upload into tmp/ (flushed to disk), hashing it on the way; `through` see it first.
   * A body already in memory with nothing to see it is written in one call, without streams.
   */
  const stage = async (source: Readable | Buffer, through: readonly Transform[] = []): Promise<Staged> => {
    if (opts.readOnly) throw forbidden(READ_ONLY);
    const tmp = layout.newTmpFile();
    try {
      if (Buffer.isBuffer(source) && through.length === 0) {
        // Opened for synchronous data writes where the system has them: a write returns once its
        // bytes are on disk, so no fsync of its own is waited for.
        const fh = await open(tmp, WRITE_DURABLY, 0o644);
        try {
          for (let at = 0; at < source.length; ) at += (await fh.write(source, at, source.length - at, at)).bytesWritten;
          if (!constants.O_DSYNC) await fh.sync();
        } finally {
          // Its path is what the rest uses; nothing waits for the descriptor to go.
          void fh.close().catch(() => {});
        }
        return { tmp, size: source.length, sha256: createHash("sha256").update(source).digest("hex") };
      }
      const meter = digestingStream();
      await pipeline([Buffer.isBuffer(source) ? Readable.from([source]) : source, ...through, meter.stream, createWriteStream(tmp, { flags: "wx", mode: 0o644, flush: true })]);
      return { tmp, ...meter.digest() };
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
  };

  /**
   * The file to rename into place: the staged upload, now also the blob of its digest, or a new
   * link to the blob already stored (the upload is dropped). Without hard links (a filesystem
   * that has none), the staged upload alone.
   */
  const intoBlob = async (staged: Staged): Promise<{ source: string; identity?: FileIdentity; blobbed: boolean }> => {
    const blob = layout.blobOf(staged.sha256);
    const ours = { source: staged.tmp, blobbed: false };
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        // Not flushed: the content's durability is the path's (renamed into place and flushed
        // below). A blob link a crash loses only costs a second copy of that content later.
        await link(staged.tmp, blob);
        return { ...ours, blobbed: true };
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOENT") {
          await mkdir(dirname(blob), { recursive: true });
          continue;
        }
        if (code !== "EEXIST") return ours;
      }
      const other = layout.newTmpFile();
      try {
        await link(blob, other);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") continue; // removed meanwhile: store ours
        throw err;
      }
      // The shared file's time moves forward, so a cache holding an older version of the path
      // this lands on never takes it for unchanged (If-Modified-Since).
      const now = new Date();
      await utimes(other, now, now);
      const [st] = await Promise.all([stat(other), rm(staged.tmp, { force: true })]);
      return { source: other, identity: identityOf(st), blobbed: false };
    }
    return ours;
  };

  /** Removes the blob of a digest when no artifact links to it any more. */
  const releaseBlob = async (sha256: string): Promise<void> => {
    const blob = layout.blobOf(sha256);
    const st = await stat(blob).catch(() => undefined);
    if (st?.isFile() && st.nlink === 1) await unlink(blob).catch(() => {});
  };

  /**
   * Drops an upload that will not be placed: its staged file, the blob only it made, the link
   * to a blob it took instead. Nothing once it is placed (the file is the path's then).
   */
  const discard = async (w: Staged | Prepared): Promise<void> => {
    if (!("staged" in w)) {
      await rm(w.tmp, { force: true }).catch(() => {});
      return;
    }
    if (w.placed) return;
    if (w.source !== w.staged.tmp) await rm(w.source, { force: true }).catch(() => {});
    // The staged file first, so a blob it made has only its own link left and goes too.
    await rm(w.staged.tmp, { force: true }).catch(() => {});
    if (w.blobbed) await releaseBlob(w.staged.sha256).catch(() => {});
  };

  /**
   * What a write can do before it takes the path's lock: link the staged upload to the blob of
   * its content (or link that blob instead). Content is stored by digest, so it needs no lock
   * and shows nowhere; `discard` undoes it. Nothing is made in the repository's folder before
   * the lock, which the repository's removal holds back.
   */
  const prepare = async (staged: Staged): Promise<Prepared> => {
    if (opts.readOnly) throw forbidden(READ_ONLY);
    // The staged file's inode and times (a rename keeps them) are read beside the link.
    // (When the blob existed, the staged file goes and the blob's new link is read instead.)
    const [st, { source, identity, blobbed }] = await Promise.all([stat(staged.tmp).catch((err: unknown) => err as Error), intoBlob(staged)]);
    if (!identity && st instanceof Error) throw st;
    return { staged, source, identity: identity ?? identityOf(st as Stats), blobbed, placed: false };
  };

  /**
   * Renames a prepared write into place (run under the path's lock) and starts flushing the
   * folder entry (`flushed`: the rename is durable once it resolves); the identity answered is
   * the placed file's. `check` sees the file the path holds before (or nothing) and may refuse
   * by throwing, which places nothing (the caller discards the write).
   */
  const place = async (p: Prepared, repository: string, segments: string[], check?: (before: FileIdentity | undefined) => void): Promise<Placed> => {
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
    // The folder made and the path looked up side by side, then the rename and the folder's
    // opening (for its flush): each is a round trip to the thread pool.
    const [made, before] = await Promise.allSettled([
      makeParent(),
      stat(target).catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return undefined;
        if (err.code === "ENOTDIR") throw conflict("a parent of this path is a file, not a folder");
        throw err;
      }),
    ]);
    if (made.status === "rejected") throw made.reason;
    if (before.status === "rejected") throw before.reason;
    if (before.value?.isDirectory()) throw conflict("this path is a folder of other artifacts");
    check?.(before.value?.isFile() ? identityOf(before.value) : undefined);
    const [renamed, dir] = await Promise.allSettled([rename(p.source, target), open(parent, "r")]);
    // The folder flushed: the one opened beside the rename, or (a walk tidied it away meanwhile
    // and it was made again) the one the entry is in now, by name.
    let opened = dir.status === "fulfilled" ? dir.value : undefined;
    if (renamed.status === "rejected") {
      try {
        // A walk may have tidied away an empty parent folder between mkdir and rename.
        if ((renamed.reason as NodeJS.ErrnoException).code !== "ENOENT") throw renamed.reason;
        await makeParent();
        await rename(p.source, target);
      } finally {
        void opened?.close().catch(() => {});
        opened = undefined;
      }
    }
    p.placed = true;
    const flushed = (async () => {
      if (!opened) return syncDir(parent);
      try {
        await opened.sync();
      } finally {
        await opened.close().catch(() => {});
      }
    })();
    // Awaited by the caller, who may send its commit meanwhile; never unhandled before that.
    flushed.catch(() => {});
    return { created: before.value === undefined, identity: p.identity, flushed };
  };

  return {
    readOnly: opts.readOnly,
    repoDir,
    fileOf,
    stage,
    prepare,
    place,
    discard,
    releaseBlob,

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

    /** Removes what is left of a removed repository's folder (files nothing indexed). */
    async dropRepositoryDir(repository: string): Promise<void> {
      if (opts.readOnly) throw forbidden(READ_ONLY);
      await rm(repoDir(repository), { recursive: true, force: true });
    },

    /** stage + place in one call (no metadata, no event). */
    async write(repository: string, segments: string[], source: Readable): Promise<WriteResult> {
      const staged = await stage(source);
      let prepared: Prepared | undefined;
      try {
        prepared = await prepare(staged);
        const { created, flushed } = await place(prepared, repository, segments);
        await flushed;
        return { size: staged.size, sha256: staged.sha256, created };
      } catch (err) {
        await discard(prepared ?? staged);
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

    /**
     * Removes a file; false when there was none. Empty parent folders are tidied up, and the
     * blob of `sha256` (the content removed) when nothing else links to it.
     */
    async remove(repository: string, segments: string[], sha256?: string): Promise<boolean> {
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
      if (sha256) await releaseBlob(sha256);
      return true;
    },
  };
}

export type FileStore = ReturnType<typeof fileStoreFactory>;
