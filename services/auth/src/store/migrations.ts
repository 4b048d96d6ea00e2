import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

export const migrations: Record<string, Migration> = {
  "0001_credentials_and_grants": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .createTable("credentials")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("tenant", "text", (c) => c.notNull())
        .addColumn("label", "text")
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("expires_at", "timestamptz")
        .addColumn("revoked_at", "timestamptz")
        .addColumn("allowed_ips", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
        .addColumn("bootstrap", "boolean", (c) => c.notNull().defaultTo(false))
        .addColumn("seq", "bigserial")
        .execute();
      await s
        .createTable("grants")
        .addColumn("subject_kind", "text", (c) => c.notNull())
        .addColumn("subject_id", "text", (c) => c.notNull())
        .addColumn("scope", "text", (c) => c.notNull())
        .addColumn("tokens", sql`text[]`, (c) => c.notNull())
        .addColumn("expires_at", "timestamptz")
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("grants_pk", ["subject_kind", "subject_id", "scope"])
        .execute();
    },
  },
};
