import { createHash, randomUUID } from "node:crypto";
import { closeSync, constants, createReadStream, createWriteStream, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { copyFile, link, mkdir, open, readdir, rename, rm, stat, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { forbidden } from "@svc/contracts";
import { READ_ONLY, hashing, isDigest, putThroughStaging, type BlobInfo, type BlobStore, type ByteRange, type StagedBlob, type StagedInfo } from "./blob-store.js";

/**
 * The filesystem backend, on the layout under svc.filesystem-root:
 *   blobs/sha256/<ab>/<sha256 hex>   a blob, one file per digest (<ab>: its first two hex digits)
 *   tmp/<uuid>                       staged content (same filesystem as the blobs)
 * A stage writes tmp/<uuid> and flushes it to disk; a commit hard-links it as the blob of its
 * digest (a conditional create: an existing blob is kept and its time moved forward) and flushes
 * the folder entry before it resolves, so a committed blob survives a crash.
 */
export interface FilesystemBlobStoreOptions {
  root: string;
  readOnly: boolean;
}

export interface FilesystemBlobStore extends BlobStore {
  /** Makes the store's folders (tmp/ and blobs/sha256/) when they are missing; nothing in read-only mode. */
  init(): Promise<void>;
  /**
   * Makes a file of this filesystem (not the store's) the blob of its content, without copying
   * it. When the file is the blob of `known` already (the same inode: the code before the blob
   * store hard-linked every file to its blob) it is not read; else it is read once for its digest.
   * For the migration of a data folder written before the blob store. The file is left in place.
   */
  adopt(file: string, known?: string): Promise<{ sha256: string; size: number; modified: Date }>;
}

/**
 * Bytes read per chunk when sending or hashing a blob (and the most a download holds in memory
 * here). Each chunk costs a trip to the thread pool, a buffer and a write: at 1 MiB instead of
 * 64 KiB the artifacts service spent about half the CPU per MB sent (docs/internals/performance.md).
 */
const READ_CHUNK = 1024 * 1024;

/** Bytes a staged write may hold in memory while the disk catches up (per upload). */
const WRITE_BUFFER = 1024 * 1024;

/** A new file, written durably: O_DSYNC where the system has it (else the writer flushes it). */
const WRITE_DURABLY = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_DSYNC ?? 0);

/** A staged copy's name: what tmp/ holds and deleteStaged may touch (no separators, no dots). */
const STAGED_NAME = /^[0-9A-Za-z-]{1,64}$/;
const SHARD = /^[0-9a-f]{2}$/;

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Reads a file through once: its size and SHA-256. */
async function digestOf(file: string): Promise<{ sha256: string; size: number }> {
  const h = hashing();
  await pipeline(createReadStream(file, { highWaterMark: READ_CHUNK }), h.stream, async (source: AsyncIterable<Buffer>) => {
    for await (const _ of source);
  });
  return h.result();
}

export function filesystemBlobStore(opts: FilesystemBlobStoreOptions): FilesystemBlobStore {
  const sha256Dir = join(opts.root, "blobs", "sha256");
  const tmpDir = join(opts.root, "tmp");
  const blobOf = (sha256: string) => join(sha256Dir, sha256.slice(0, 2), sha256);
  const writable = () => {
    if (opts.readOnly) throw forbidden(READ_ONLY);
  };
  let tmpMade: Promise<unknown> | undefined;
  const makeTmp = () => (tmpMade ??= mkdir(tmpDir, { recursive: true }).catch((err: unknown) => ((tmpMade = undefined), Promise.reject(err))));
  const infoOf = (sha256: string, st: Stats): BlobInfo => ({ sha256, size: st.size, modified: st.mtime });

  /**
   * Links `from` (a staged copy, or a file adopted) as the blob of `sha256`: created, or kept
   * (its time moved forward) when it exists. The folder entry is flushed before this resolves.
   */
  const linkAsBlob = async (from: string, sha256: string): Promise<{ created: boolean }> => {
    const blob = blobOf(sha256);
    const shard = join(blob, "..");
    for (let attempt = 0; ; attempt++) {
      try {
        // The shard folder opened beside the link, so its flush waits for no other round trip.
        const [linked, dir] = await Promise.allSettled([link(from, blob), open(shard, "r")]);
        if (linked.status === "rejected") {
          if (dir.status === "fulfilled") void dir.value.close().catch(() => {});
          throw linked.reason;
        }
        if (dir.status === "rejected") await syncDir(shard);
        else {
          try {
            await dir.value.sync();
          } finally {
            await dir.value.close().catch(() => {});
          }
        }
        return { created: true };
      } catch (err) {
        const code = errno(err);
        if (code === "ENOENT" && attempt < 5) {
          // The shard folder is new: made, and its own entry flushed with it.
          await mkdir(shard, { recursive: true });
          await syncDir(sha256Dir).catch(() => {});
          continue;
        }
        if (code === "EEXIST") {
          const now = new Date();
          try {
            await utimes(blob, now, now);
            return { created: false };
          } catch (e) {
            // Deleted between the link and the touch (a reclaim): link again.
            if (errno(e) === "ENOENT" && attempt < 5) continue;
            throw e;
          }
        }
        if (code === "EPERM" || code === "ENOTSUP" || code === "EXDEV" || code === "EMLINK") {
          // No hard links here: a copy, renamed into place (the same bytes, whoever wins).
          await makeTmp();
          const copy = join(tmpDir, randomUUID());
          try {
            await mkdir(shard, { recursive: true });
            await copyFile(from, copy);
            const created = !(await stat(blob).then(() => true, () => false));
            await rename(copy, blob);
            await syncDir(shard);
            return { created };
          } finally {
            await rm(copy, { force: true }).catch(() => {});
          }
        }
        throw err;
      }
    }
  };

  const stage = async (source: Readable | Buffer, o: { through?: readonly Transform[] } = {}): Promise<StagedBlob> => {
    writable();
    await makeTmp();
    const name = randomUUID();
    const tmp = join(tmpDir, name);
    const through = o.through ?? [];
    try {
      if (Buffer.isBuffer(source) && through.length === 0) {
        // Opened for synchronous data writes where the system has them: a write returns once its
        // bytes are on disk, so no fsync of its own is waited for.
        const fh = await open(tmp, WRITE_DURABLY, 0o644);
        try {
          for (let at = 0; at < source.length; ) at += (await fh.write(source, at, source.length - at, at)).bytesWritten;
          if (!constants.O_DSYNC) await fh.sync();
        } finally {
          await fh.close().catch(() => {});
        }
        return { name, size: source.length, sha256: createHash("sha256").update(source).digest("hex") };
      }
      const h = hashing(source, through);
      // Up to WRITE_BUFFER buffered: the body goes on arriving while a write is under way, and
      // what arrived meanwhile goes in one write (at Node's 16 KiB default every 64 KiB socket
      // read waited for its own write: a 16 MiB layer took three times as long, CPU four times).
      await pipeline([Buffer.isBuffer(source) ? Readable.from([source]) : source, ...through, h.stream, createWriteStream(tmp, { flags: "wx", mode: 0o644, flush: true, highWaterMark: WRITE_BUFFER })]);
      return { name, ...h.result() };
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
  };

  const commit = async (staged: StagedBlob): Promise<{ created: boolean }> => {
    writable();
    if (!isDigest(staged.sha256) || !STAGED_NAME.test(staged.name)) throw new Error("not a staged blob of this store");
    return linkAsBlob(join(tmpDir, staged.name), staged.sha256);
  };

  const discard = async (staged: StagedBlob): Promise<void> => {
    if (!STAGED_NAME.test(staged.name)) return;
    await rm(join(tmpDir, staged.name), { force: true }).catch(() => {});
  };

  /** The regular file of a blob, or undefined. */
  const statBlob = async (sha256: string): Promise<Stats | undefined> => {
    if (!isDigest(sha256)) return undefined;
    const st = await stat(blobOf(sha256)).catch((err: unknown) => {
      if (errno(err) === "ENOENT" || errno(err) === "ENOTDIR") return undefined;
      throw err;
    });
    return st?.isFile() ? st : undefined;
  };

  return {
    kind: "filesystem",
    readOnly: opts.readOnly,

    async init() {
      if (opts.readOnly) return;
      await Promise.all([makeTmp(), mkdir(sha256Dir, { recursive: true })]);
    },
    stage,
    commit,
    discard,

    put: (source, o) => putThroughStaging({ stage, commit, discard }, source, o),

    async head(sha256) {
      const st = await statBlob(sha256);
      return st ? infoOf(sha256, st) : undefined;
    },

    async get(sha256: string, range?: ByteRange) {
      if (!isDigest(sha256)) return undefined;
      // Opened first, so a missing blob answers undefined rather than a stream that fails.
      const fh = await open(blobOf(sha256), constants.O_RDONLY).catch((err: unknown) => {
        if (errno(err) === "ENOENT" || errno(err) === "ENOTDIR") return undefined;
        throw err;
      });
      if (!fh) return undefined;
      return fh.createReadStream({ highWaterMark: READ_CHUNK, ...(range ? { start: range.start, end: range.end } : {}) });
    },

    readSmall(sha256, maxBytes) {
      if (!isDigest(sha256)) return undefined;
      let fd: number;
      try {
        // Non-blocking: what is not a regular file never holds the loop; fstat turns it away.
        fd = openSync(blobOf(sha256), constants.O_RDONLY | constants.O_NONBLOCK);
      } catch {
        return undefined;
      }
      try {
        const st = fstatSync(fd);
        if (!st.isFile() || st.size > maxBytes) return undefined;
        const body = Buffer.allocUnsafe(st.size);
        for (let at = 0; at < st.size; ) {
          const n = readSync(fd, body, at, st.size - at, at);
          if (n === 0) return undefined;
          at += n;
        }
        return body;
      } catch {
        return undefined;
      } finally {
        closeSync(fd);
      }
    },

    async delete(sha256) {
      writable();
      if (!isDigest(sha256)) return false;
      try {
        await unlink(blobOf(sha256));
      } catch (err) {
        if (errno(err) === "ENOENT" || errno(err) === "ENOTDIR") return false;
        throw err;
      }
      await syncDir(join(blobOf(sha256), "..")).catch(() => {});
      return true;
    },

    async list({ after, limit }) {
      const out: BlobInfo[] = [];
      if (limit <= 0) return out;
      const shards = (await readdir(sha256Dir).catch((err: unknown) => (errno(err) === "ENOENT" ? [] : Promise.reject(err)))).filter((s) => SHARD.test(s)).sort();
      const from = after?.slice(0, 2) ?? "";
      for (const shard of shards) {
        if (shard < from) continue;
        // One shard folder's names at a time (1/256 of the store).
        const names = (await readdir(join(sha256Dir, shard)).catch(() => [] as string[])).filter((n) => isDigest(n) && n.startsWith(shard) && (after === undefined || n > after)).sort();
        for (const name of names) {
          const st = await statBlob(name);
          if (!st) continue; // deleted meanwhile
          out.push(infoOf(name, st));
          if (out.length >= limit) return out;
        }
      }
      return out;
    },

    async listStaged({ after, limit }) {
      const names = (await readdir(tmpDir).catch((err: unknown) => (errno(err) === "ENOENT" ? [] : Promise.reject(err)))).filter((n) => STAGED_NAME.test(n) && (after === undefined || n > after)).sort();
      const out: StagedInfo[] = [];
      for (const name of names) {
        const st = await stat(join(tmpDir, name)).catch(() => undefined);
        if (!st?.isFile()) continue;
        out.push({ name, size: st.size, modified: st.mtime });
        if (out.length >= limit) break;
      }
      return out;
    },

    async deleteStaged(name, olderThanMs) {
      writable();
      if (!STAGED_NAME.test(name)) return undefined;
      const file = join(tmpDir, name);
      const st = await stat(file).catch(() => undefined);
      if (!st?.isFile() || Date.now() - st.mtimeMs < olderThanMs) return undefined;
      try {
        await unlink(file);
      } catch (err) {
        if (errno(err) === "ENOENT") return undefined;
        throw err;
      }
      // Committed already (a crash between commit and discard): its bytes stay as the blob, nothing freed yet.
      return st.nlink > 1 ? 0 : st.size;
    },

    async adopt(file, known) {
      writable();
      const st = await stat(file);
      if (!st.isFile()) throw new Error(`not a regular file: ${file}`);
      const linked = known !== undefined ? await statBlob(known) : undefined;
      if (linked && linked.ino === st.ino && linked.dev === st.dev) return { sha256: known!, size: st.size, modified: st.mtime };
      const { sha256, size } = await digestOf(file);
      const blob = await statBlob(sha256);
      // Already its blob (hard-linked by the code before the blob store): nothing to link.
      if (!(blob && blob.ino === st.ino && blob.dev === st.dev)) await linkAsBlob(file, sha256);
      return { sha256, size, modified: st.mtime };
    },
  };
}
