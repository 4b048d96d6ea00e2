import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

/** The walks every new deployment starts with (an operator may edit or remove them). */
export const DEFAULT_WALKS = [
  { name: "retention", schedule: "0 0 3 * * *", jobs: ["retention"] },
  { name: "rebuild", schedule: "0 0 3 * * 0", jobs: ["reclaim", "repair", "backfill"] },
];

export const migrations: Record<string, Migration> = {
  "0001_walks_runs_leases": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .createTable("walks")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("schedule", "text", (c) => c.notNull())
        .addColumn("enabled", "boolean", (c) => c.notNull().defaultTo(true))
        .addColumn("jobs", sql`text[]`, (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("last_fire_at", "timestamptz")
        .execute();
      await s
        .createTable("runs")
        .addColumn("id", "bigserial", (c) => c.primaryKey())
        .addColumn("walk", "text", (c) => c.notNull())
        .addColumn("trigger", "text", (c) => c.notNull())
        .addColumn("scheduled_for", "timestamptz")
        .addColumn("holder", "text", (c) => c.notNull())
        .addColumn("jobs", sql`text[]`, (c) => c.notNull())
        .addColumn("started_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("ended_at", "timestamptz")
        .addColumn("outcome", "text", (c) => c.notNull())
        .addColumn("counts", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
        .addColumn("entries", "bigint", (c) => c.notNull().defaultTo(0))
        .addColumn("bytes", "bigint", (c) => c.notNull().defaultTo(0))
        .addColumn("error_reference", "text")
        .execute();
      await s.createIndex("runs_by_walk").on("runs").columns(["walk", "id"]).execute();
      await sql`create index runs_running on ${sql.id(SCHEMA, "runs")} (walk) where outcome = 'running'`.execute(db);
      await s
        .createTable("leases")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("holder", "text", (c) => c.notNull())
        .addColumn("acquired_at", "timestamptz", (c) => c.notNull())
        .addColumn("expires_at", "timestamptz", (c) => c.notNull())
        .execute();
      // A new deployment's defaults: the retention walk daily and the rebuild walk on Sundays, 03:00 UTC.
      for (const w of DEFAULT_WALKS) {
        await db
          .withSchema(SCHEMA)
          .insertInto("walks" as never)
          .values({ name: w.name, schedule: w.schedule, jobs: w.jobs } as never)
          .execute();
      }
    },
  },
  "0002_run_detail": {
    async up(db: Kysely<unknown>) {
      await db.schema.withSchema(SCHEMA).alterTable("runs").addColumn("detail", "text").execute();
    },
  },
  "0003_run_problems": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .withSchema(SCHEMA)
        .alterTable("runs")
        .addColumn("problems", "jsonb", (c) => c.notNull().defaultTo(sql`'{"count":0,"first":[]}'::jsonb`))
        .execute();
    },
  },
  "0004_run_blobs_duration": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .withSchema(SCHEMA)
        .alterTable("runs")
        .addColumn("blobs", "bigint", (c) => c.notNull().defaultTo(0))
        .addColumn("duration_ms", "bigint")
        .execute();
    },
  },
};
