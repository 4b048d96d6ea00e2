import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

export const migrations: Record<string, Migration> = {
  "0001_rate_limits": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .withSchema(SCHEMA)
        .createTable("rate_limits")
        .addColumn("tenant", "text", (c) => c.primaryKey())
        .addColumn("requests_per_minute", "integer", (c) => c.notNull())
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
    },
  },
  "0002_runtime_settings": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .withSchema(SCHEMA)
        .createTable("runtime_settings")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("value", "text", (c) => c.notNull())
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await db.schema
        .withSchema(SCHEMA)
        .createTable("setting_changes")
        .addColumn("id", "bigserial", (c) => c.primaryKey())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("old_value", "text")
        .addColumn("new_value", "text")
        .addColumn("principal", "text", (c) => c.notNull())
        .addColumn("changed_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
    },
  },
  "0003_tenant_settings": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .withSchema(SCHEMA)
        .createTable("tenant_settings")
        .addColumn("tenant", "text", (c) => c.notNull())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("value", "text", (c) => c.notNull())
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("tenant_settings_pkey", ["tenant", "name"])
        .execute();
      await db.schema.withSchema(SCHEMA).alterTable("setting_changes").addColumn("tenant", "text").execute();
    },
  },
  // Numbered with the work's own suffix: renumber at the merge if another 0004 lands first.
  "0004_home_meter_samples": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .withSchema(SCHEMA)
        .createTable("meter_samples")
        .addColumn("slot", "timestamptz", (c) => c.primaryKey())
        .addColumn("taken_at", "timestamptz", (c) => c.notNull())
        .addColumn("taken_by", "text", (c) => c.notNull())
        .addColumn("nodes", "jsonb", (c) => c.notNull())
        .addColumn("storage_bytes", "bigint")
        .execute();
      await db.schema
        .withSchema(SCHEMA)
        .createTable("recent_publishes")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("published_at", "timestamptz", (c) => c.notNull())
        .addColumn("repository", "text", (c) => c.notNull())
        .addColumn("path", "text", (c) => c.notNull())
        .addColumn("size", "bigint", (c) => c.notNull())
        .addColumn("actor", "text", (c) => c.notNull())
        .execute();
      await db.schema.withSchema(SCHEMA).createIndex("recent_publishes_published_at").on("recent_publishes").column("published_at").execute();
    },
  },
};
