import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "../../store/schema.js";

/** The Maven format's tables (store/migrations.ts migrationsOf puts them in order with the service's). */
export const mavenMigrations: Record<string, Migration> = {
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
  "0019_maven_publish_times": {
    async up(db: Kysely<unknown>) {
      // When a proxy repository's upstream published a version (its .pom's Last-Modified), as the
      // cooldown reads it: learned once, then the same answer on every node and after a restart.
      await db.schema
        .withSchema(SCHEMA)
        .createTable("maven_publish_times")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("group_id", "text", (c) => c.notNull())
        .addColumn("artifact_id", "text", (c) => c.notNull())
        .addColumn("version", "text", (c) => c.notNull())
        .addColumn("published_at", "timestamptz", (c) => c.notNull())
        .addColumn("learned_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("maven_publish_times_pk", ["repository", "group_id", "artifact_id", "version"])
        .execute();
    },
  },
};
