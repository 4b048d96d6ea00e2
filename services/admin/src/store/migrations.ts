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
};
