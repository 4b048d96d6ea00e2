import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";
import { pypiFilesFollowArtifacts, pypiMigration } from "../formats/pypi/pypi-store.js";

export const migrations: Record<string, Migration> = {
  "0001_repositories_and_artifacts": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .createTable("repositories")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("format", "text", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await s
        .createTable("artifacts")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("path", "text", (c) => c.notNull())
        .addColumn("size", "bigint", (c) => c.notNull())
        .addColumn("sha256", "text", (c) => c.notNull())
        .addColumn("content_type", "text")
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("artifacts_pk", ["repository", "path"])
        .execute();
    },
  },
  "0002_outbox_downloads_retention_holds": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .alterTable("artifacts")
        .addColumn("last_downloaded_at", "timestamptz")
        .addColumn("downloads", "bigint", (c) => c.notNull().defaultTo(0))
        .addColumn("held_reason", "text")
        .addColumn("held_at", "timestamptz")
        .execute();
      // Walks page through a repository in byte order of the path, the order they read the tree in.
      await sql`create index artifacts_by_path_bytes on ${sql.id(SCHEMA, "artifacts")} (repository, (path collate "C"))`.execute(db);
      await s.alterTable("repositories").addColumn("retention", "jsonb").execute();
      await s
        .createTable("outbox")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("seq", "bigserial", (c) => c.notNull())
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("event", "jsonb", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("sent_at", "timestamptz")
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`create index outbox_unsent on ${sql.id(SCHEMA, "outbox")} (seq) where sent_at is null`.execute(db);
      await sql`create index outbox_sent on ${sql.id(SCHEMA, "outbox")} (sent_at) where sent_at is not null`.execute(db);
    },
  },
  "0003_npm_packages": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      // One row per package, one per version: a publish inserts its version row, so concurrent
      // publishes of different versions never rewrite one shared document.
      await s
        .createTable("npm_packages")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("dist_tags", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
        .addColumn("rev", "integer", (c) => c.notNull().defaultTo(1))
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("modified_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("npm_packages_pk", ["repository", "name"])
        .execute();
      await s
        .createTable("npm_versions")
        .addColumn("repository", "text", (c) => c.notNull())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("version", "text", (c) => c.notNull())
        .addColumn("manifest", "jsonb", (c) => c.notNull())
        .addColumn("tarball", "text", (c) => c.notNull())
        .addColumn("published_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("npm_versions_pk", ["repository", "name", "version"])
        .addForeignKeyConstraint("npm_versions_package", ["repository", "name"], `${SCHEMA}.npm_packages`, ["repository", "name"], (c) => c.onDelete("cascade"))
        .execute();
    },
  },
  "0004_exports_and_npm_tombstones": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      // An export's record outlives the process running it: a restart finds it and says it was interrupted.
      await s
        .createTable("exports")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("source", "text", (c) => c.notNull())
        .addColumn("target", "text", (c) => c.notNull())
        .addColumn("format", "text", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("actor", "text", (c) => c.notNull())
        .addColumn("total", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("copied", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("skipped", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("refused", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("refusals", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
        .addColumn("detail", "text")
        .addColumn("started_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("heartbeat_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("ended_at", "timestamptz")
        .execute();
      await s.createIndex("exports_by_source").on("exports").columns(["source", "started_at"]).execute();
      // npm never lets a version number be used twice: an unpublished version stays unpublishable.
      await s
        .createTable("npm_unpublished")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("version", "text", (c) => c.notNull())
        .addColumn("unpublished_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("npm_unpublished_pk", ["repository", "name", "version"])
        .execute();
    },
  },
  "0005_maven": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      const repository = (c: ColumnDefinitionBuilder) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade");
      // Rows per version and per snapshot file, so deploys of different versions each add their
      // own row and the metadata documents are written from them, never merged by clients.
      await s
        .createTable("maven_versions")
        .addColumn("repository", "text", repository)
        .addColumn("group_id", "text", (c) => c.notNull())
        .addColumn("artifact_id", "text", (c) => c.notNull())
        .addColumn("version", "text", (c) => c.notNull())
        .addColumn("deployed_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("maven_versions_pk", ["repository", "group_id", "artifact_id", "version"])
        .execute();
      await s
        .createTable("maven_snapshots")
        .addColumn("repository", "text", repository)
        .addColumn("group_id", "text", (c) => c.notNull())
        .addColumn("artifact_id", "text", (c) => c.notNull())
        .addColumn("version", "text", (c) => c.notNull())
        .addColumn("classifier", "text", (c) => c.notNull())
        .addColumn("extension", "text", (c) => c.notNull())
        .addColumn("value", "text", (c) => c.notNull())
        .addColumn("timestamp", "text", (c) => c.notNull())
        .addColumn("build_number", "integer", (c) => c.notNull())
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("maven_snapshots_pk", ["repository", "group_id", "artifact_id", "version", "classifier", "extension", "value"])
        .execute();
      await s
        .createTable("maven_digests")
        .addColumn("sha256", "text", (c) => c.primaryKey())
        .addColumn("sha1", "text", (c) => c.notNull())
        .addColumn("md5", "text", (c) => c.notNull())
        .addColumn("sha512", "text", (c) => c.notNull())
        .execute();
      await s
        .createTable("maven_settings")
        .addColumn("repository", "text", (c) => c.primaryKey().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("release_redeploy", "boolean", (c) => c.notNull().defaultTo(false))
        .execute();
    },
  },
  "0006_pypi_files": pypiMigration,
  "0007_pypi_files_follow_artifacts": pypiFilesFollowArtifacts,
  "0008_repository_removal": {
    async up(db: Kysely<unknown>) {
      await db.schema.withSchema(SCHEMA).alterTable("repositories").addColumn("removing_since", "timestamptz").execute();
    },
  },
  "0009_artifacts_by_sha256": {
    async up(db: Kysely<unknown>) {
      // The index is the truth and counts references: a reclaim asks whether any path holds a blob.
      await db.schema.withSchema(SCHEMA).createIndex("artifacts_by_sha256").on("artifacts").column("sha256").execute();
    },
  },
};
