import type { Kysely, Selectable, Transaction } from "kysely";
import { SCHEMA, type AuthDatabase, type LoginTable } from "./schema.js";

export type LoginRow = Selectable<LoginTable>;
type Db = Kysely<AuthDatabase> | Transaction<AuthDatabase>;

/** The sign-ins waiting for a person (auth.logins). */
export function loginStoreFactory(root: Kysely<AuthDatabase>) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  return {
    async insert(row: { code: string; doneHash: string; client: LoginRow["client"]; label: string | null; expiresAt: Date }, tx?: Db) {
      await db(tx).insertInto("logins").values({ code: row.code, done_hash: row.doneHash, client: row.client, label: row.label, expires_at: row.expiresAt }).execute();
    },
    async byCode(code: string, now: Date, tx?: Db) {
      return db(tx).selectFrom("logins").selectAll().where("code", "=", code).where("expires_at", ">", now).executeTakeFirst();
    },
    async byDoneHash(hash: string, now: Date, tx?: Db) {
      return db(tx).selectFrom("logins").selectAll().where("done_hash", "=", hash).where("expires_at", ">", now).executeTakeFirst();
    },
    /** The person confirms a sign-in still waiting for one; false when there is none (expired, unknown, or confirmed already). */
    async confirm(code: string, person: string, now: Date, tx?: Db): Promise<boolean> {
      const r = await db(tx).updateTable("logins").set({ person }).where("code", "=", code).where("person", "is", null).where("expires_at", ">", now).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },
    /** Takes a confirmed sign-in away: only one caller gets it. */
    async take(hash: string, now: Date, tx?: Db) {
      return db(tx).deleteFrom("logins").where("done_hash", "=", hash).where("person", "is not", null).where("expires_at", ">", now).returningAll().executeTakeFirst();
    },
    async purgeExpired(now: Date, tx?: Db) {
      await db(tx).deleteFrom("logins").where("expires_at", "<=", now).execute();
    },
  };
}

export type LoginStore = ReturnType<typeof loginStoreFactory>;
