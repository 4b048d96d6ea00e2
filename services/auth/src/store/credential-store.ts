import { sql, type Kysely, type Transaction } from "kysely";
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

    async insert(row: { id: string; tenant: string; label: string | null; expiresAt: Date | null; allowedIps?: string[]; owner?: string | null }, tx?: Db) {
      return db(tx)
        .insertInto("credentials")
        .values({ id: row.id, tenant: row.tenant, label: row.label, expires_at: row.expiresAt, allowed_ips: row.allowedIps ?? [], owner: row.owner ?? null })
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

    /** In id order; `expiringBetween`: only keys not revoked whose expiry lies after `from` and at or before `to`. */
    async list(opts: { after?: string; limit: number; expiringBetween?: { from: Date; to: Date }; owner?: string }, tx?: Db) {
      let q = db(tx).selectFrom("credentials").selectAll().orderBy("id").limit(opts.limit);
      if (opts.after) q = q.where("id", ">", opts.after);
      if (opts.owner !== undefined) q = q.where("owner", "=", opts.owner);
      const w = opts.expiringBetween;
      if (w) q = q.where("revoked_at", "is", null).where("expires_at", ">", w.from).where("expires_at", "<=", w.to);
      return q.execute();
    },

    async revoke(id: string, at: Date, tx?: Db) {
      await db(tx).updateTable("credentials").set({ revoked_at: at }).where("id", "=", id).where("revoked_at", "is", null).execute();
    },

    /** Revokes every personal key of a person still standing; the ids it revoked. */
    async revokeOwnedBy(owner: string, at: Date, tx?: Db): Promise<string[]> {
      const rows = await db(tx).updateTable("credentials").set({ revoked_at: at }).where("owner", "=", owner).where("revoked_at", "is", null).returning("id").execute();
      return rows.map((r) => r.id);
    },

    async setExpiry(id: string, expiresAt: Date | null, tx?: Db) {
      return db(tx).updateTable("credentials").set({ expires_at: expiresAt }).where("id", "=", id).returningAll().executeTakeFirstOrThrow();
    },

    /** Rotation: the old key ends at `expiresAt` and remembers its successor. */
    async retire(id: string, expiresAt: Date, successor: string, tx?: Db) {
      await db(tx).updateTable("credentials").set({ expires_at: expiresAt, rotated_to: successor }).where("id", "=", id).execute();
    },

    async setAllowedIps(id: string, addresses: string[], tx?: Db) {
      return db(tx).updateTable("credentials").set({ allowed_ips: addresses }).where("id", "=", id).returningAll().executeTakeFirstOrThrow();
    },

    /** Adds batched use records: one statement for the whole batch. */
    async recordUsage(batch: { id: string; count: number; lastUsed: Date; address: string }[], tx?: Db) {
      if (batch.length === 0) return;
      const values = sql.join(batch.map((u) => sql`(${u.id}::text, ${u.count}::bigint, ${u.lastUsed.toISOString()}::timestamptz, ${u.address}::text)`));
      await sql`
        update ${sql.table(`${SCHEMA}.credentials`)} as c
           set use_count = c.use_count + v.n,
               last_used_at = greatest(coalesce(c.last_used_at, v.at), v.at),
               last_used_from = case when c.last_used_at is null or v.at >= c.last_used_at then v.addr else c.last_used_from end
          from (values ${values}) as v(id, n, at, addr)
         where c.id = v.id`.execute(tx ?? root);
    },

    async copyGrants(fromKind: GrantRow["subject_kind"], fromId: string, toId: string, tx?: Db) {
      const rows = await db(tx).selectFrom("grants").selectAll().where("subject_kind", "=", fromKind).where("subject_id", "=", fromId).execute();
      if (rows.length === 0) return;
      await db(tx)
        .insertInto("grants")
        .values(rows.map((r) => ({ subject_kind: r.subject_kind, subject_id: toId, scope: r.scope, tokens: r.tokens, expires_at: r.expires_at, updated_at: new Date() })))
        .execute();
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
