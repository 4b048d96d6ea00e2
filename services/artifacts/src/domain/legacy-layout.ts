import { opendir, rmdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { Logger } from "pino";
import type { FilesystemBlobStore } from "@svc/blobs";
import { parseArtifactUrl } from "@svc/grants";
import { lockKey, type MetadataStore } from "../store/metadata-store.js";
import type { Address, ArtifactService, IndexOutcome } from "./artifact-service.js";

export interface LegacyLayoutDeps {
  /** svc.filesystem-root. */
  root: string;
  blobs: Pick<FilesystemBlobStore, "readOnly" | "adopt" | "head">;
  artifacts: Pick<ArtifactService, "indexFound">;
  metadata: Pick<MetadataStore, "find" | "repositories">;
  pool: pg.Pool;
  log: Pick<Logger, "info" | "warn">;
}

export type LegacyCounts = Record<IndexOutcome | "skipped", number>;

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * The data folder as the code before the blob store wrote it: every artifact a file at
 * repositories/<repository>/<path> (a hard link to its blob, or, for content from before the
 * blobs or a publish a crash cut short, a file of its own), and index rows that may be missing or
 * name other content. Migrated in place on the first start of this version: each file's content
 * becomes its blob (linked, not copied; read once when it is not linked already), its index row
 * is made to say it holds that content (a missing row is created, dated by the file's
 * modification time, with the rows its format's indexing step adds, as the walker's backfill
 * did; a row naming other content is corrected: the file is what was served), then the file
 * goes. Emptied folders go, repositories/ last.
 *
 * Under a cluster-wide advisory lock, so replicas starting together migrate once (the others
 * wait, then find nothing left). Safe to cut at any point: each file is done (row committed)
 * before it is unlinked, so a second start finishes the job. The one place a directory tree is
 * read, and only while repositories/ exists.
 */
export async function migrateLegacyLayout(deps: LegacyLayoutDeps): Promise<LegacyCounts | undefined> {
  const dir = join(deps.root, "repositories");
  if (!(await exists(dir))) return undefined;
  if (deps.blobs.readOnly) {
    deps.log.warn({ folder: dir }, "the data folder holds files laid out as before the blob store: they are not served until the service starts once without svc.read-only, which migrates them");
    return undefined;
  }
  const client = await deps.pool.connect();
  const key = lockKey("legacy-layout-migration");
  try {
    await client.query(`select pg_advisory_lock(${key})`);
    try {
      // Another replica may have finished it while this one waited.
      if (!(await exists(dir))) return undefined;
      return await migrate(deps, dir);
    } finally {
      await client.query(`select pg_advisory_unlock(${key})`);
    }
  } finally {
    client.release();
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    (st) => st.isDirectory(),
    (err: unknown) => (errno(err) === "ENOENT" ? false : Promise.reject(err)),
  );
}

async function migrate(deps: LegacyLayoutDeps, dir: string): Promise<LegacyCounts> {
  const counts: LegacyCounts = { created: 0, corrected: 0, unchanged: 0, missing: 0, skipped: 0 };
  const started = Date.now();
  deps.log.info({ folder: dir }, "migrating the data folder's repositories/ into the blob store and the path index");
  const known = new Set((await deps.metadata.repositories()).map((r) => r.name));

  const file = async (repository: string, segments: string[], at: string) => {
    let a: Address;
    try {
      a = parseArtifactUrl(`/repository/${encodeURIComponent(repository)}/${segments.map(encodeURIComponent).join("/")}`);
    } catch {
      counts.skipped++;
      deps.log.warn({ repository, path: segments.join("/") }, "left a file whose path no artifact can have");
      return;
    }
    const row = await deps.metadata.find(repository, a.path);
    const found = await deps.blobs.adopt(at, row?.sha256);
    const outcome = await deps.artifacts.indexFound(a, { sha256: found.sha256, size: found.size, at: found.modified }, async () => {
      // A reclaim may have taken the blob since (nothing referenced it yet): linked again.
      if (!(await deps.blobs.head(found.sha256))) await deps.blobs.adopt(at);
    });
    counts[outcome]++;
    // Its content is the blob's now, and the index says so: the file goes. (In a repository
    // being removed it stays, as that removal leaves it.)
    if (outcome !== "missing") await unlink(at).catch((err: unknown) => (errno(err) === "ENOENT" ? undefined : Promise.reject(err)));
  };

  const walk = async (repository: string, folder: string, segments: string[]): Promise<void> => {
    const d = await opendir(folder);
    for await (const entry of d) {
      const at = join(folder, entry.name);
      if (entry.isDirectory()) {
        await walk(repository, at, [...segments, entry.name]);
        await rmdir(at).catch(() => {}); // not empty: something was left, and said so
      } else if (entry.isFile()) {
        await file(repository, [...segments, entry.name], at);
      } else {
        counts.skipped++;
        deps.log.warn({ repository, path: [...segments, entry.name].join("/") }, "left what is not a regular file");
      }
    }
  };

  const top = await opendir(dir);
  for await (const entry of top) {
    const at = join(dir, entry.name);
    if (!entry.isDirectory() || !known.has(entry.name)) {
      counts.skipped++;
      deps.log.warn({ entry: entry.name }, "left an entry of repositories/ that is no repository's folder");
      continue;
    }
    await walk(entry.name, at, []);
    await rmdir(at).catch(() => {});
  }
  const removed = await rmdir(dir).then(
    () => true,
    () => false,
  );
  deps.log.info({ ...counts, ms: Date.now() - started, folderRemoved: removed }, removed ? "the data folder is migrated: repositories/ is gone" : "the data folder is migrated; repositories/ keeps what was left (see the warnings above)");
  return counts;
}
