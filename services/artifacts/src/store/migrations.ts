import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

export const migrations: Record<string, Migration> = {
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
};
