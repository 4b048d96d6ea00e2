import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

export const migrations: Record<string, Migration> = {
  "0001_events_and_deliveries": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .createTable("events")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("time", "timestamptz", (c) => c.notNull())
        .addColumn("payload", "text", (c) => c.notNull())
        .addColumn("received_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await s
        .createTable("deliveries")
        .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
        .addColumn("event_id", "text", (c) => c.notNull().references(`${SCHEMA}.events.id`).onDelete("cascade"))
        .addColumn("endpoint", "text", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull().defaultTo("pending").check(sql`state in ('pending', 'delivered', 'set-aside')`))
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("round_attempts", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("next_attempt_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("lease_until", "timestamptz")
        .addColumn("lease_token", "text")
        .addColumn("last_status", "integer")
        .addColumn("last_error", "text")
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("delivered_at", "timestamptz")
        .addUniqueConstraint("deliveries_event_endpoint", ["event_id", "endpoint"])
        .execute();
      // What the workers look for: the next due delivery of one endpoint.
      await sql`create index deliveries_due on ${sql.table(`${SCHEMA}.deliveries`)} (endpoint, next_attempt_at) where state = 'pending'`.execute(db);
      await s.createIndex("deliveries_by_state").on("deliveries").columns(["state", "id"]).execute();
    },
  },
  "0002_history_pruning": {
    async up(db: Kysely<unknown>) {
      // What pruning looks for: finished deliveries by when they finished; events by age.
      await sql`create index deliveries_finished on ${sql.table(`${SCHEMA}.deliveries`)} (updated_at) where state <> 'pending'`.execute(db);
      await db.schema.withSchema(SCHEMA).createIndex("events_received").on("events").column("received_at").execute();
    },
  },
};
