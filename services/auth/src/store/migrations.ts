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
  "0002_people_groups_usage": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .alterTable("credentials")
        .addColumn("last_used_at", "timestamptz")
        .addColumn("last_used_from", "text")
        .addColumn("use_count", "bigint", (c) => c.notNull().defaultTo(0))
        .execute();
      await s
        .createTable("principals")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("label", "text")
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await s
        .createTable("groups")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("label", "text")
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await s
        .createTable("memberships")
        .addColumn("group_name", "text", (c) => c.notNull().references(`${SCHEMA}.groups.name`).onDelete("cascade"))
        .addColumn("principal_id", "text", (c) => c.notNull())
        .addColumn("added_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("memberships_pk", ["group_name", "principal_id"])
        .execute();
      await s.createIndex("memberships_by_principal").on("memberships").column("principal_id").execute();
    },
  },
  "0003_outbox_rotation": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s.alterTable("credentials").addColumn("rotated_to", "text").execute();
      await s
        .createTable("outbox")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("seq", "bigserial", (c) => c.notNull())
        .addColumn("event", "jsonb", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await s.createIndex("outbox_by_seq").on("outbox").column("seq").execute();
    },
  },
  "0004_personal_keys": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      // The person a personal key belongs to (null: a key an administrator issued).
      await s.alterTable("credentials").addColumn("owner", "text").execute();
      await s.createIndex("credentials_by_owner").on("credentials").column("owner").where(sql.ref("owner"), "is not", null).execute();
      // Sign-ins of npm and svc through the console (login-flow-service.ts): short-lived, deleted when picked up.
      await s
        .createTable("logins")
        .addColumn("code", "text", (c) => c.primaryKey())
        .addColumn("done_hash", "text", (c) => c.notNull().unique())
        .addColumn("client", "text", (c) => c.notNull())
        .addColumn("label", "text")
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("expires_at", "timestamptz", (c) => c.notNull())
        .addColumn("person", "text")
        .execute();
    },
  },
};
