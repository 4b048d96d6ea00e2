import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";
import type { FormatModule } from "../formats/format.js";
import { gateMigrations } from "../gate/gate-store.js";
import { cooldownMigrations } from "../gate/cooldown-store.js";
import { buildCacheMigrations } from "../build-cache/build-cache-store.js";
import { quotaMigrations } from "./quota-migrations.js";
import { scopeMigrations } from "./scope-migrations.js";
import { fetchStreamMigrations } from "../proxy/fetch-relay.js";

/**
 * The service's own tables. A format's tables are its module's (`FormatModule.migrations`, in
 * its folder); `migrationsOf` puts both together. Names sort in the order they run, across the
 * service and every format (a new one takes the next number), and never change: a database
 * records the names it has run. 0004 made the npm format's `npm_unpublished` with the exports
 * table, before formats were modules, and stays here whole.
 */
export const serviceMigrations: Record<string, Migration> = {
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
  "0011_repository_type_upstream": {
    async up(db: Kysely<unknown>) {
      // Repositories made before proxies are hosted ones.
      await db.schema
        .withSchema(SCHEMA)
        .alterTable("repositories")
        .addColumn("type", "text", (c) => c.notNull().defaultTo("hosted"))
        .addColumn("upstream_url", "text")
        .addColumn("upstream_credentials", "text")
        .execute();
    },
  },
  "0013_downloaders": {
    async up(db: Kysely<unknown>) {
      // Who downloaded a file (a finding names them: the blast radius), one row per file and
      // principal, written with the download counts in batches. A removed file's rows stay
      // (a finding about it still names who has it) until its repository goes.
      await db.schema
        .withSchema(SCHEMA)
        .createTable("downloaders")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("path", "text", (c) => c.notNull())
        .addColumn("principal", "text", (c) => c.notNull())
        .addColumn("first_at", "timestamptz", (c) => c.notNull())
        .addColumn("last_at", "timestamptz", (c) => c.notNull())
        .addColumn("downloads", "bigint", (c) => c.notNull())
        .addPrimaryKeyConstraint("downloaders_pk", ["repository", "path", "principal"])
        .execute();
    },
  },
  "0015_proxy_documents": {
    async up(db: Kysely<unknown>) {
      // Proxy repositories' metadata documents as their upstreams last answered them, by key
      // (proxy/proxied-documents.ts); body null: a definite miss.
      await db.schema
        .withSchema(SCHEMA)
        .createTable("proxy_documents")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("key", "text", (c) => c.notNull())
        .addColumn("body", "text")
        .addColumn("etag", "text")
        .addColumn("last_modified", "text")
        .addColumn("fetched_at", "timestamptz", (c) => c.notNull())
        .addPrimaryKeyConstraint("proxy_documents_pk", ["repository", "key"])
        .execute();
    },
  },
  "0016_imports": {
    async up(db: Kysely<unknown>) {
      // Imports into proxy repositories (domain/proxy-import.ts): the packages listed, how many
      // are done and the counts as of then (written together), the node's heartbeat.
      await db.schema
        .withSchema(SCHEMA)
        .createTable("imports")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("format", "text", (c) => c.notNull())
        .addColumn("target", "text")
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("actor", "text", (c) => c.notNull())
        .addColumn("packages", "jsonb", (c) => c.notNull())
        .addColumn("done", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("imported", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("skipped", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("held", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("refused", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("refusals", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
        .addColumn("export_id", "uuid")
        .addColumn("detail", "text")
        .addColumn("started_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("heartbeat_at", "timestamptz", (c) => c.notNull())
        .addColumn("ended_at", "timestamptz")
        .execute();
      await db.schema.withSchema(SCHEMA).createIndex("imports_by_repository").on("imports").columns(["repository", "started_at"]).execute();
    },
  },
  "0018_group_members": {
    async up(db: Kysely<unknown>) {
      // A group repository's members in the order they are asked (domain/repository-admin.ts).
      // A member is not dropped while a group names it (no cascade): its removal is refused, or
      // forced, takes it out of every group first, in the transaction that drops it.
      const s = db.schema.withSchema(SCHEMA);
      await s
        .createTable("group_members")
        .addColumn("group_name", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("position", "integer", (c) => c.notNull())
        .addColumn("member", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`))
        .addPrimaryKeyConstraint("group_members_pk", ["group_name", "position"])
        .addUniqueConstraint("group_members_once", ["group_name", "member"])
        .execute();
      await s.createIndex("group_members_by_member").on("group_members").column("member").execute();
    },
  },
  // The screening gate's tables (gate/gate-store.ts).
  ...gateMigrations,
  // The cooldown's (gate/cooldown-store.ts).
  ...cooldownMigrations,
  // The build caches' (build-cache/build-cache-store.ts).
  ...buildCacheMigrations,
  // Storage quotas and usage (store/quota-migrations.ts).
  ...quotaMigrations,
  // Authorising by the repository the path names, per repository (store/scope-migrations.ts).
  ...scopeMigrations,
  // Proxy fetches other nodes stream from (proxy/fetch-relay.ts).
  ...fetchStreamMigrations,
};

/** The service's migrations and those of every format of `table`; a name used twice refuses. */
export function migrationsOf(table: readonly Pick<FormatModule, "name" | "migrations">[]): Record<string, Migration> {
  const all: Record<string, Migration> = { ...serviceMigrations };
  for (const f of table) {
    for (const [name, m] of Object.entries(f.migrations ?? {})) {
      if (Object.hasOwn(all, name)) throw new Error(`migration ${name} of the ${f.name} format has a name already used`);
      all[name] = m;
    }
  }
  return all;
}
