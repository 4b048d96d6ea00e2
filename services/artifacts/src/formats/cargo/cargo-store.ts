import { sql, type ColumnType, type Kysely, type Migration } from "kysely";
import type { Db } from "../../store/metadata-store.js";
import { SCHEMA, type ArtifactsDatabase } from "../../store/schema.js";

/** A published version of a crate: its index line, and its .crate file (an artifact at `path`). */
interface CargoVersionTable {
  repository: string;
  /** As the publisher spelt it (the index's `name`). */
  name: string;
  /** Lowercase: the index file's name. */
  lower: string;
  /** Lowercase with `_` as `-`: two crates may not share it (canonicalName). */
  canonical: string;
  version: string;
  /** The version without build metadata: `1.0.0+a` and `1.0.0+b` are one version to cargo. */
  version_key: string;
  path: string;
  /** The index line as published (JSON text, its key order kept), `yanked` set from the column when read. */
  entry: string;
  yanked: ColumnType<boolean, boolean | undefined, boolean>;
  description: string | null;
  published_at: ColumnType<Date, Date | undefined, never>;
}

/** Who a crate's owners are (`cargo owner`): logins, the publisher's principal first. */
interface CargoOwnerTable {
  repository: string;
  canonical: string;
  login: string;
  added_at: ColumnType<Date, Date | undefined, never>;
}

type CargoDatabase = Pick<ArtifactsDatabase, "artifacts"> & { cargo_versions: CargoVersionTable; cargo_owners: CargoOwnerTable };

/**
 * The crates of cargo repositories. A version's row follows its .crate file's artifact row by a
 * deferred foreign key, as PyPI's do (pypi-store.ts): whatever removes the file (a DELETE,
 * retention, a repair) takes the version out of the index with it.
 */
export const cargoMigration: Migration = {
  async up(db: Kysely<unknown>) {
    const versions = sql.id(SCHEMA, "cargo_versions");
    await db.schema
      .withSchema(SCHEMA)
      .createTable("cargo_versions")
      .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("lower", "text", (c) => c.notNull())
      .addColumn("canonical", "text", (c) => c.notNull())
      .addColumn("version", "text", (c) => c.notNull())
      .addColumn("version_key", "text", (c) => c.notNull())
      .addColumn("path", "text", (c) => c.notNull())
      .addColumn("entry", "text", (c) => c.notNull())
      .addColumn("yanked", "boolean", (c) => c.notNull().defaultTo(false))
      .addColumn("description", "text")
      .addColumn("published_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
      .addPrimaryKeyConstraint("cargo_versions_pk", ["repository", "canonical", "version_key"])
      .execute();
    await sql`create index cargo_versions_by_lower on ${versions} (repository, lower)`.execute(db);
    await sql`create unique index cargo_versions_by_path on ${versions} (repository, path)`.execute(db);
    await sql`alter table ${versions} add constraint cargo_versions_artifact foreign key (repository, path) references ${sql.id(SCHEMA, "artifacts")} (repository, path) on delete cascade deferrable initially deferred`.execute(db);
    await db.schema
      .withSchema(SCHEMA)
      .createTable("cargo_owners")
      .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
      .addColumn("canonical", "text", (c) => c.notNull())
      .addColumn("login", "text", (c) => c.notNull())
      .addColumn("added_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
      .addPrimaryKeyConstraint("cargo_owners_pk", ["repository", "canonical", "login"])
      .execute();
  },
};

export interface CargoVersionRow {
  name: string;
  version: string;
  path: string;
  entry: string;
  yanked: boolean;
  description: string | null;
  published: Date;
}

/** One version to record in a publish's transaction. */
export type NewCargoVersion = Omit<CargoVersionRow, "yanked" | "published"> & { canonical: string; versionKey: string };

export function cargoStoreFactory(root: Db) {
  const db = (tx?: Db) => ((tx ?? root) as unknown as Kysely<CargoDatabase>).withSchema(SCHEMA);
  const columns = ["name", "version", "path", "entry", "yanked", "description", "published_at"] as const;
  const row = (r: { name: string; version: string; path: string; entry: string; yanked: boolean; description: string | null; published_at: Date }): CargoVersionRow => ({
    name: r.name,
    version: r.version,
    path: r.path,
    entry: r.entry,
    yanked: r.yanked,
    description: r.description,
    published: r.published_at,
  });
  return {
    /** A crate's versions by its index file's (lowercase) name, in publish order; held files left out (the screening gate). */
    async indexVersions(repository: string, lower: string): Promise<CargoVersionRow[]> {
      const rows = await db()
        .selectFrom("cargo_versions")
        .select(columns)
        .where("repository", "=", repository)
        .where("lower", "=", lower)
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom("artifacts").select("path").whereRef("artifacts.repository", "=", "cargo_versions.repository").whereRef("artifacts.path", "=", "cargo_versions.path").where("artifacts.held_reason", "is not", null))),
        )
        .orderBy("published_at")
        .orderBy(sql`version collate "C"`)
        .execute();
      return rows.map(row);
    },

    /** Every version of the crate `canonical` names (any spelling), held ones too. */
    async versions(repository: string, canonical: string, tx?: Db): Promise<CargoVersionRow[]> {
      const rows = await db(tx).selectFrom("cargo_versions").select(columns).where("repository", "=", repository).where("canonical", "=", canonical).orderBy("published_at").execute();
      return rows.map(row);
    },

    /** In the publish's transaction (under the crate's lock): false when the version (without build metadata) is recorded already. */
    async insertVersion(tx: Db, repository: string, v: NewCargoVersion): Promise<boolean> {
      const r = await db(tx)
        .insertInto("cargo_versions")
        .values({ repository, name: v.name, lower: v.name.toLowerCase(), canonical: v.canonical, version: v.version, version_key: v.versionKey, path: v.path, entry: v.entry, description: v.description })
        .onConflict((oc) => oc.columns(["repository", "canonical", "version_key"]).doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },

    /** Sets a version's yanked state; false when the crate has no such version. */
    async setYanked(repository: string, canonical: string, version: string, yanked: boolean): Promise<boolean> {
      const r = await db().updateTable("cargo_versions").set({ yanked }).where("repository", "=", repository).where("canonical", "=", canonical).where("version", "=", version).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    /** Crates whose name contains `query` (case-insensitively), by name: each with its versions. */
    async search(repository: string, query: string): Promise<Map<string, CargoVersionRow[]>> {
      const like = `%${query.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const rows = await db().selectFrom("cargo_versions").select([...columns, "canonical"]).where("repository", "=", repository).where("lower", "like", like).orderBy(sql`canonical collate "C"`).orderBy("published_at").execute();
      const out = new Map<string, CargoVersionRow[]>();
      for (const r of rows) out.set(r.canonical, [...(out.get(r.canonical) ?? []), row(r)]);
      return out;
    },

    async owners(repository: string, canonical: string, tx?: Db): Promise<string[]> {
      const rows = await db(tx).selectFrom("cargo_owners").select("login").where("repository", "=", repository).where("canonical", "=", canonical).orderBy("added_at").orderBy(sql`login collate "C"`).execute();
      return rows.map((r) => r.login);
    },

    async addOwners(repository: string, canonical: string, logins: readonly string[], tx?: Db): Promise<void> {
      if (logins.length === 0) return;
      await db(tx)
        .insertInto("cargo_owners")
        .values(logins.map((login) => ({ repository, canonical, login })))
        .onConflict((oc) => oc.columns(["repository", "canonical", "login"]).doNothing())
        .execute();
    },

    async removeOwners(repository: string, canonical: string, logins: readonly string[]): Promise<void> {
      if (logins.length === 0) return;
      await db().deleteFrom("cargo_owners").where("repository", "=", repository).where("canonical", "=", canonical).where("login", "in", logins).execute();
    },
  };
}
export type CargoStore = ReturnType<typeof cargoStoreFactory>;
