import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";
import { pypiMigration } from "./pypi-store.js";

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
  "0004_pypi_files": pypiMigration,
};
