import { randomUUID, createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { conflict, forbidden } from "@svc/contracts";

/**
 * The filesystem store. Layout under the root:
 *   repositories/<repository>/<path>   artifact content
 *   tmp/<uuid>                         uploads in progress
 * A write streams into tmp/ (same filesystem), is flushed to disk, then renamed into place
 * and the directory entry flushed: a crash leaves the old content or none, never half a file.
 * The read-only switch is enforced here too, so nothing inside the service bypasses it.
 */
export interface FileStoreOptions {
  root: string;
  readOnly: boolean;
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
  const reposDir = join(opts.root, "repositories");
  const tmpDir = join(opts.root, "tmp");
  const repoDir = (repository: string) => join(reposDir, repository);
  const fileOf = (repository: string, segments: string[]) => join(repoDir(repository), ...segments);

  return {
    repoDir,
    fileOf,

    async init(repositories: string[]): Promise<void> {
      await mkdir(tmpDir, { recursive: true });
      for (const r of repositories) await mkdir(repoDir(r), { recursive: true });
      // Leftovers of uploads a crash interrupted more than a day ago (other replicas may be writing now).
      const cutoff = Date.now() - 86_400_000;
      for (const name of await readdir(tmpDir)) {
        const p = join(tmpDir, name);
        const st = await stat(p).catch(() => undefined);
        if (st && st.mtimeMs < cutoff) await rm(p, { force: true });
      }
    },

    async write(repository: string, segments: string[], source: Readable): Promise<WriteResult> {
      if (opts.readOnly) throw forbidden(READ_ONLY);
      const target = fileOf(repository, segments);
      const tmp = join(tmpDir, randomUUID());
      const hash = createHash("sha256");
      let size = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          hash.update(chunk);
          size += chunk.length;
          cb(null, chunk);
        },
      });
      try {
        await pipeline(source, meter, createWriteStream(tmp, { flags: "wx", mode: 0o644, flush: true }));
        const parent = join(target, "..");
        try {
          await mkdir(parent, { recursive: true });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "ENOTDIR" || code === "EEXIST") throw conflict("a parent of this path is a file, not a folder");
          throw err;
        }
        const before = await stat(target).catch((err: NodeJS.ErrnoException) => {
          if (err.code === "ENOENT") return undefined;
          if (err.code === "ENOTDIR") throw conflict("a parent of this path is a file, not a folder");
          throw err;
        });
        if (before?.isDirectory()) throw conflict("this path is a folder of other artifacts");
        await rename(tmp, target);
        await syncDir(parent);
        return { size, sha256: hash.digest("hex"), created: before === undefined };
      } catch (err) {
        await rm(tmp, { force: true }).catch(() => {});
        throw err;
      }
    },

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
