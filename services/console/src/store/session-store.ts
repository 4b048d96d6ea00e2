import { sql, type Kysely } from "kysely";
import { SCHEMA, type ConsoleDatabase } from "./schema.js";

export interface StoredSession {
  id: string;
  tenant: string;
  personId: string;
  csrf: string;
  expiresAt: Date;
  lastSeenAt: Date;
}

/** Sessions and sign-ins under way, in the console's own schema (shared by every console replica). */
export function sessionStoreFactory(root: Kysely<ConsoleDatabase>) {
  const db = () => root.withSchema(SCHEMA);
  return {
    async create(s: { id: string; tenant: string; personId: string; csrf: string; expiresAt: Date }): Promise<void> {
      await db().insertInto("sessions").values({ id: s.id, tenant: s.tenant, person_id: s.personId, csrf: s.csrf, expires_at: s.expiresAt }).execute();
    },
    /**
     * The live session with this id, its last use moved to now: one statement, so a session past
     * its lifetime or idle for `idleMs` is never revived by the lookup that finds it.
     */
    async touch(id: string, idleMs: number): Promise<StoredSession | undefined> {
      const row = await db()
        .updateTable("sessions")
        .set({ last_seen_at: sql<Date>`now()` })
        .where("id", "=", id)
        .where("ended_at", "is", null)
        .where("expires_at", ">", sql<Date>`now()`)
        .where("last_seen_at", ">", sql<Date>`now() - make_interval(secs => ${idleMs / 1000})`)
        .returning(["id", "tenant", "person_id", "csrf", "expires_at", "last_seen_at"])
        .executeTakeFirst();
      return row && { id: row.id, tenant: row.tenant, personId: row.person_id, csrf: row.csrf, expiresAt: row.expires_at, lastSeenAt: row.last_seen_at };
    },
    /** Ends a session; false when there was no live one. */
    async end(id: string): Promise<boolean> {
      const r = await db().updateTable("sessions").set({ ended_at: sql<Date>`now()` }).where("id", "=", id).where("ended_at", "is", null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },
    /** Leaves a notice for the live session's next page, shown until `ttlMs` from now. */
    async setNotice(id: string, text: string, ttlMs: number): Promise<void> {
      await db()
        .updateTable("sessions")
        .set({ notice: text, notice_until: sql<Date>`now() + make_interval(secs => ${ttlMs / 1000})` })
        .where("id", "=", id)
        .where("ended_at", "is", null)
        .execute();
    },
    /** Takes the session's notice (shown once): undefined when there is none or it is past its time. */
    async takeNotice(id: string): Promise<string | undefined> {
      const r = await sql<{ notice: string | null; fresh: boolean }>`
        update ${sql.table(`${SCHEMA}.sessions`)} s set notice = null, notice_until = null
        from (select id, notice, notice_until from ${sql.table(`${SCHEMA}.sessions`)} where id = ${id} and notice is not null for update) old
        where s.id = old.id
        returning old.notice, old.notice_until > now() as fresh`.execute(root);
      const row = r.rows[0];
      return row?.fresh && row.notice !== null ? row.notice : undefined;
    },
    /** Drops sessions ended or past their lifetime, and sign-ins older than `signInMaxAgeMs`. */
    async prune(signInMaxAgeMs: number): Promise<void> {
      await db().deleteFrom("sessions").where((eb) => eb.or([eb("expires_at", "<", sql<Date>`now()`), eb("ended_at", "is not", null)])).execute();
      await db().deleteFrom("sign_ins").where("created_at", "<", sql<Date>`now() - make_interval(secs => ${signInMaxAgeMs / 1000})`).execute();
    },
    async addSignIn(s: { id: string; provider: string; nonce: string; codeVerifier: string }): Promise<void> {
      await db().insertInto("sign_ins").values({ id: s.id, provider: s.provider, nonce: s.nonce, code_verifier: s.codeVerifier }).execute();
    },
    /** Takes a sign-in under way (used once): undefined when unknown or older than `maxAgeMs`. */
    async takeSignIn(id: string, maxAgeMs: number): Promise<{ provider: string; nonce: string; codeVerifier: string } | undefined> {
      const row = await db().deleteFrom("sign_ins").where("id", "=", id).returning(["provider", "nonce", "code_verifier", "created_at"]).executeTakeFirst();
      if (!row || Date.now() - row.created_at.getTime() > maxAgeMs) return undefined;
      return { provider: row.provider, nonce: row.nonce, codeVerifier: row.code_verifier };
    },
  };
}
export type SessionStore = ReturnType<typeof sessionStoreFactory>;
