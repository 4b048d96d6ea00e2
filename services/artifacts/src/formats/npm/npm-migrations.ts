import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "../../store/schema.js";

/** The npm format's tables (store/migrations.ts migrationsOf puts them in order with the service's). */
export const npmMigrations: Record<string, Migration> = {
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
  "0012_npm_proxy_documents": {
    async up(db: Kysely<unknown>) {
      // A proxy repository's packuments as its upstream last answered them (formats/npm/npm-proxy-service.ts).
      await db.schema
        .withSchema(SCHEMA)
        .createTable("npm_proxy_documents")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("document", "text")
        .addColumn("etag", "text")
        .addColumn("fetched_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("npm_proxy_documents_pk", ["repository", "name"])
        .execute();
    },
  },
};
