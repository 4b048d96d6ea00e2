import type { Kysely, Transaction } from "kysely";
import type { AuthDatabase, CredentialTable, GrantTable } from "./schema.js";
import { SCHEMA } from "./schema.js";
import type { Selectable } from "kysely";

export type CredentialRow = Selectable<CredentialTable>;
export type GrantRow = Selectable<GrantTable>;
type Db = Kysely<AuthDatabase> | Transaction<AuthDatabase>;

/** Kysely access to the auth schema; every method takes an optional transaction. */
export function credentialStoreFactory(root: Kysely<AuthDatabase>) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);

  return {
    transaction<T>(fn: (tx: Transaction<AuthDatabase>) => Promise<T>): Promise<T> {
      return root.transaction().execute(fn);
    },

    async insert(row: { id: string; tenant: string; label: string | null; expiresAt: Date | null; bootstrap?: boolean }, tx?: Db) {
      return db(tx)
        .insertInto("credentials")
        .values({ id: row.id, tenant: row.tenant, label: row.label, expires_at: row.expiresAt, bootstrap: row.bootstrap ?? false })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    /** The bootstrap key: created if absent, made active and non-expiring on every boot. */
    async upsertBootstrap(id: string, tenant: string, tx?: Db) {
      await db(tx)
        .insertInto("credentials")
        .values({ id, tenant, label: "bootstrap key", expires_at: null, bootstrap: true })
        .onConflict((oc) => oc.column("id").doUpdateSet({ expires_at: null, revoked_at: null, bootstrap: true }))
        .execute();
    },

    async findById(id: string, tx?: Db, opts: { forUpdate?: boolean } = {}) {
      let q = db(tx).selectFrom("credentials").selectAll().where("id", "=", id);
      if (opts.forUpdate) q = q.forUpdate();
      return q.executeTakeFirst();
    },

    async list(opts: { after?: string; limit: number }, tx?: Db) {
      let q = db(tx).selectFrom("credentials").selectAll().orderBy("id").limit(opts.limit);
      if (opts.after) q = q.where("id", ">", opts.after);
      return q.execute();
    },

    async revoke(id: string, at: Date, tx?: Db) {
      await db(tx).updateTable("credentials").set({ revoked_at: at }).where("id", "=", id).where("revoked_at", "is", null).execute();
    },

    async grantsOf(kind: GrantRow["subject_kind"], ids: string[], tx?: Db) {
      if (ids.length === 0) return [];
      return db(tx).selectFrom("grants").selectAll().where("subject_kind", "=", kind).where("subject_id", "in", ids).orderBy("scope").execute();
    },

    async setGrant(g: { kind: GrantRow["subject_kind"]; subjectId: string; scope: string; tokens: string[]; expiresAt: Date | null }, tx?: Db) {
      const now = new Date();
      return db(tx)
        .insertInto("grants")
        .values({ subject_kind: g.kind, subject_id: g.subjectId, scope: g.scope, tokens: g.tokens, expires_at: g.expiresAt, updated_at: now })
        .onConflict((oc) => oc.columns(["subject_kind", "subject_id", "scope"]).doUpdateSet({ tokens: g.tokens, expires_at: g.expiresAt, updated_at: now }))
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    async removeGrant(kind: GrantRow["subject_kind"], subjectId: string, scope: string, tx?: Db): Promise<boolean> {
      const r = await db(tx).deleteFrom("grants").where("subject_kind", "=", kind).where("subject_id", "=", subjectId).where("scope", "=", scope).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
  };
}

export type CredentialStore = ReturnType<typeof credentialStoreFactory>;
