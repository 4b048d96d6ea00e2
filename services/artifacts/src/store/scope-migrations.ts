import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

/**
 * A repository's `scope_from_path` (docs/administration/repositories.md, "Keys granted on one
 * repository"): a request to it without Service-Repository-Name is authorised against the
 * repository its path names instead of `*`. Off for every repository that was there before.
 */
export const scopeMigrations: Record<string, Migration> = {
  "0025_scope_from_path": {
    async up(db: Kysely<unknown>) {
      await sql`alter table ${sql.id(SCHEMA)}.repositories add column scope_from_path boolean not null default false`.execute(db);
    },
  },
};
