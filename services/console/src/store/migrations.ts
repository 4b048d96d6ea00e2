import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

export const migrations: Record<string, Migration> = {
  "0001_sessions": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .createTable("sessions")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("tenant", "text", (c) => c.notNull())
        .addColumn("person_id", "text", (c) => c.notNull())
        .addColumn("csrf", "text", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("expires_at", "timestamptz", (c) => c.notNull())
        .addColumn("last_seen_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("ended_at", "timestamptz")
        .execute();
      await s.createIndex("sessions_by_expiry").on("sessions").column("expires_at").execute();
      await s
        .createTable("sign_ins")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("provider", "text", (c) => c.notNull())
        .addColumn("nonce", "text", (c) => c.notNull())
        .addColumn("code_verifier", "text", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
    },
  },
  "0002_session_notices": {
    async up(db: Kysely<unknown>) {
      // A notice for the session's next page (post/redirect/get), kept here rather than in a
      // cookie anything able to set a cookie for the host could write.
      await db.schema.withSchema(SCHEMA).alterTable("sessions").addColumn("notice", "text").addColumn("notice_until", "timestamptz").execute();
    },
  },
};
