import { sql, type Kysely, type Migration } from "kysely";
import type { Db } from "../../store/metadata-store.js";
import { SCHEMA } from "../../store/schema.js";

/**
 * The versions of Go modules uploaded: one row per module version, its zip the artifact at
 * `path`. The row outlives its zip's removal (`removed_at`): a version, once published, keeps its
 * content (the go command's checksums depend on it), so an upload of it again must bring the same zip.
 */
export const goMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .withSchema(SCHEMA)
      .createTable("go_versions")
      .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
      .addColumn("module", "text", (c) => c.notNull())
      .addColumn("version", "text", (c) => c.notNull())
      .addColumn("path", "text", (c) => c.notNull())
      .addColumn("sha256", "text", (c) => c.notNull())
      .addColumn("size", "bigint", (c) => c.notNull())
      .addColumn("go_mod", "bytea", (c) => c.notNull())
      .addColumn("uploaded_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
      .addColumn("removed_at", "timestamptz")
      .addPrimaryKeyConstraint("go_versions_pk", ["repository", "module", "version"])
      .execute();
    await sql`create unique index go_versions_by_path on ${sql.id(SCHEMA, "go_versions")} (repository, path)`.execute(db);
  },
};

export interface GoVersionRow {
  module: string;
  version: string;
  path: string;
  sha256: string;
  size: number;
  uploaded: Date;
  removed: Date | null;
  /** The hold on its zip (the screening gate, an administrator); null when served. */
  held: string | null;
}

type Raw = { module: string; version: string; path: string; sha256: string; size: string; uploaded_at: Date; removed_at: Date | null; held_reason: string | null };
const rowOf = (r: Raw): GoVersionRow => ({ module: r.module, version: r.version, path: r.path, sha256: r.sha256, size: Number(r.size), uploaded: r.uploaded_at, removed: r.removed_at, held: r.held_reason });

const T = sql.id(SCHEMA, "go_versions");
const A = sql.id(SCHEMA, "artifacts");
const COLUMNS = sql`v.module, v.version, v.path, v.sha256, v.size, v.uploaded_at, v.removed_at, a.held_reason`;

/** The Go module versions of a repository (go_versions), read and written in the callers' transactions. */
export function goStoreFactory(root: Db) {
  return {
    /** One version, removed or not. */
    async find(repository: string, module: string, version: string, tx?: Db): Promise<GoVersionRow | undefined> {
      const r = await sql<Raw>`select ${COLUMNS} from ${T} v left join ${A} a on a.repository = v.repository and a.path = v.path where v.repository = ${repository} and v.module = ${module} and v.version = ${version}`.execute(tx ?? root);
      return r.rows[0] ? rowOf(r.rows[0]) : undefined;
    },

    /** A module's versions that are served: not removed (held ones too: the caller decides). */
    async versions(repository: string, module: string): Promise<GoVersionRow[]> {
      const r = await sql<Raw>`select ${COLUMNS} from ${T} v left join ${A} a on a.repository = v.repository and a.path = v.path where v.repository = ${repository} and v.module = ${module} and v.removed_at is null`.execute(root);
      return r.rows.map(rowOf);
    },

    /** The row of a version being published, locked for the rest of the transaction. */
    async lock(tx: Db, repository: string, module: string, version: string): Promise<{ sha256: string; removed: boolean } | undefined> {
      const r = await sql<{ sha256: string; removed: boolean }>`select sha256, removed_at is not null as removed from ${T} where repository = ${repository} and module = ${module} and version = ${version} for update`.execute(tx);
      return r.rows[0];
    },

    /** A version's row; `uploaded` (default now) is the time `.info` gives it. */
    async insert(tx: Db, repository: string, v: { module: string; version: string; path: string; sha256: string; size: number; goMod: Buffer; uploaded?: Date }): Promise<boolean> {
      const r = await sql`insert into ${T} (repository, module, version, path, sha256, size, go_mod, uploaded_at)
        values (${repository}, ${v.module}, ${v.version}, ${v.path}, ${v.sha256}, ${v.size}, ${v.goMod}, coalesce(${v.uploaded ?? null}::timestamptz, now())) on conflict do nothing`.execute(tx);
      return Number(r.numAffectedRows ?? 0) > 0;
    },

    /** A removed version uploaded again with its own zip: served again, with its first upload time. */
    async restore(tx: Db, repository: string, module: string, version: string): Promise<void> {
      await sql`update ${T} set removed_at = null where repository = ${repository} and module = ${module} and version = ${version}`.execute(tx);
    },

    /** Its zip went (a DELETE, retention, a repair): the version is no longer served, and keeps its content for an upload again. */
    async markRemoved(tx: Db, repository: string, path: string): Promise<void> {
      await sql`update ${T} set removed_at = now() where repository = ${repository} and path = ${path} and removed_at is null`.execute(tx);
    },

    /** A version's go.mod as the proxy serves it (`.mod`). */
    async goMod(repository: string, module: string, version: string): Promise<Buffer | undefined> {
      const r = await sql<{ go_mod: Buffer }>`select go_mod from ${T} where repository = ${repository} and module = ${module} and version = ${version} and removed_at is null`.execute(root);
      return r.rows[0]?.go_mod;
    },
  };
}
export type GoStore = ReturnType<typeof goStoreFactory>;
