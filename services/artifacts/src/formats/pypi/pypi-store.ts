import { sql, type Kysely, type Migration } from "kysely";
import type { Db } from "../../store/metadata-store.js";
import { SCHEMA } from "../../store/schema.js";

export interface PypiFileRow {
  filename: string;
  project: string;
  displayName: string;
  version: string;
  path: string;
  sha256: string;
  size: number;
  requiresPython: string | null;
  /** null: not yanked; else the reason ("" when none was given). */
  yanked: string | null;
  uploaded: Date;
}

/** The PyPI file index; kept beside this store so the format's schema change stays in its own file. */
export const pypiMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .withSchema(SCHEMA)
      .createTable("pypi_files")
      .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
      .addColumn("filename", "text", (c) => c.notNull())
      .addColumn("project", "text", (c) => c.notNull())
      .addColumn("display_name", "text", (c) => c.notNull())
      .addColumn("version", "text", (c) => c.notNull())
      .addColumn("path", "text", (c) => c.notNull())
      .addColumn("sha256", "text", (c) => c.notNull())
      .addColumn("size", "bigint", (c) => c.notNull())
      .addColumn("requires_python", "text")
      .addColumn("yanked", "text")
      .addColumn("uploaded_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
      .addPrimaryKeyConstraint("pypi_files_pk", ["repository", "filename"])
      .execute();
    await sql`create index pypi_files_by_project on ${sql.id(SCHEMA, "pypi_files")} (repository, project, (filename collate "C"))`.execute(db);
  },
};

/**
 * A file's index row goes with its artifact's row, whichever path removes it (a DELETE,
 * retention, repair, a forced repository removal): the simple index never lists a file that is
 * not stored. Deferred, so an upload writes its index row before the artifact's in one
 * transaction; the cascade itself is immediate. Rows a removal left behind before go first.
 */
export const pypiFilesFollowArtifacts: Migration = {
  async up(db: Kysely<unknown>) {
    const files = sql.id(SCHEMA, "pypi_files");
    await sql`delete from ${files} f where not exists (select 1 from ${sql.id(SCHEMA, "artifacts")} a where a.repository = f.repository and a.path = f.path)`.execute(db);
    // The cascade looks rows up by path on every artifact removal, in every repository.
    await sql`create unique index pypi_files_by_path on ${files} (repository, path)`.execute(db);
    await sql`alter table ${files} add constraint pypi_files_artifact foreign key (repository, path) references ${sql.id(SCHEMA, "artifacts")} (repository, path) on delete cascade deferrable initially deferred`.execute(db);
  },
};

/** The files of PyPI repositories: one row per uploaded file, the simple index reads them by project. */
export function pypiStoreFactory(root: Db) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  const columns = ["filename", "project", "display_name", "version", "path", "sha256", "size", "requires_python", "yanked", "uploaded_at"] as const;
  type Raw = { filename: string; project: string; display_name: string; version: string; path: string; sha256: string; size: string; requires_python: string | null; yanked: string | null; uploaded_at: Date };
  const row = (r: Raw): PypiFileRow => ({
    filename: r.filename,
    project: r.project,
    displayName: r.display_name,
    version: r.version,
    path: r.path,
    sha256: r.sha256,
    size: Number(r.size),
    requiresPython: r.requires_python,
    yanked: r.yanked,
    uploaded: r.uploaded_at,
  });
  return {
    async findFile(repository: string, filename: string, tx?: Db): Promise<PypiFileRow | undefined> {
      const r = await db(tx).selectFrom("pypi_files").select(columns).where("repository", "=", repository).where("filename", "=", filename).executeTakeFirst();
      return r ? row(r) : undefined;
    },

    /** A project's files in file-name order (byte order, the same on every replica), held files left out. */
    async files(repository: string, project: string): Promise<PypiFileRow[]> {
      const rows = await db()
        .selectFrom("pypi_files")
        .select(columns)
        .where("repository", "=", repository)
        .where("project", "=", project)
        // A held file is not listed (the screening gate, docs/administration/screening.md): pip picks the newest file it may download.
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom("artifacts").select("path").whereRef("artifacts.repository", "=", "pypi_files.repository").whereRef("artifacts.path", "=", "pypi_files.path").where("artifacts.held_reason", "is not", null))),
        )
        .orderBy(sql`filename collate "C"`)
        .execute();
      return rows.map(row);
    },

    /** A page of a repository's files in file-name order (byte order), after `after`. */
    async pageFiles(repository: string, after: string | undefined, limit: number): Promise<PypiFileRow[]> {
      let q = db().selectFrom("pypi_files").select(columns).where("repository", "=", repository);
      if (after !== undefined) q = q.where(sql<boolean>`filename collate "C" > ${after}`);
      const rows = await q.orderBy(sql`filename collate "C"`).limit(limit).execute();
      return rows.map(row);
    },

    /** Every project of a repository (normalised names), in byte order. */
    async projects(repository: string): Promise<string[]> {
      const rows = await db().selectFrom("pypi_files").select("project").where("repository", "=", repository).groupBy("project").orderBy(sql`project collate "C"`).execute();
      return rows.map((r) => r.project);
    },

    /** In the upload's transaction (the artifact's row comes later in it). false when a file of that name is recorded already. `yanked`, `uploaded`: an export brings the source's along. */
    async insertFile(tx: Db, repository: string, f: Omit<PypiFileRow, "uploaded" | "yanked"> & { yanked?: string | null; uploaded?: Date }): Promise<boolean> {
      const r = await db(tx)
        .insertInto("pypi_files")
        .values({
          repository,
          filename: f.filename,
          project: f.project,
          display_name: f.displayName,
          version: f.version,
          path: f.path,
          sha256: f.sha256,
          size: f.size,
          requires_python: f.requiresPython,
          yanked: f.yanked ?? null,
          ...(f.uploaded ? { uploaded_at: f.uploaded } : {}),
        })
        .onConflict((oc) => oc.columns(["repository", "filename"]).doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },

    /** Yanks (reason, "" for none) or unyanks (null) the files of a version, or one file of it; the file names changed. */
    async setYanked(repository: string, project: string, version: string, yanked: string | null, filename?: string): Promise<string[]> {
      let q = db().updateTable("pypi_files").set({ yanked }).where("repository", "=", repository).where("project", "=", project).where("version", "=", version);
      if (filename !== undefined) q = q.where("filename", "=", filename);
      const rows = await q.returning("filename").execute();
      return rows.map((r) => r.filename).sort();
    },
  };
}
export type PypiStore = ReturnType<typeof pypiStoreFactory>;
