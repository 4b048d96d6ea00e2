import { sql, type Kysely } from "kysely";
import { AUDIT_SCHEMA, type AuditDatabase } from "@svc/kit";
import type { AuditEntryView } from "@svc/contracts";

/** What a search of the audit trail may narrow by (each optional; all given must hold). */
export interface AuditQuery {
  /** Entries older than this one (the cursor: an entry id). */
  after?: string;
  limit: number;
  /** The actor: a principal id (exact), a key's label (part of it), or `<kind>:<tenant>:<id>`. */
  actor?: string;
  /** An action or the start of one up to a dot (`key` finds `key.issue` and `key.revoke`). */
  action?: string;
  /** Text in the object, path, action, actor's label or what the entry keeps of the request. */
  q?: string;
  since?: Date;
  until?: Date;
}


const like = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * The audit trail as the admin service reads it: searched newest first, and purged by age
 * (svc.audit-retention). The services that make changes append to it (kit's audit-trail.ts).
 */
export function auditStoreFactory(root: Kysely<AuditDatabase>) {
  const db = () => root.withSchema(AUDIT_SCHEMA);
  return {
    async search(q: AuditQuery): Promise<AuditEntryView[]> {
      let query = db().selectFrom("entries").selectAll().orderBy("id", "desc").limit(q.limit);
      if (q.after !== undefined) query = query.where("id", "<", q.after);
      if (q.since) query = query.where("at", ">=", q.since);
      if (q.until) query = query.where("at", "<", q.until);
      if (q.action !== undefined) {
        const action = q.action;
        query = query.where((eb) => eb.or([eb("action", "=", action), eb("action", "like", `${action.replace(/[\\%_]/g, (c) => `\\${c}`)}.%`)]));
      }
      if (q.actor !== undefined) {
        const actor = q.actor;
        const parts = /^(key|person|system|anonymous):([^:]*):(.*)$/.exec(actor);
        query = parts
          ? query.where("actor_kind", "=", parts[1]!).where("tenant", "=", parts[2]!).where("actor_id", "=", parts[3]!)
          : query.where((eb) => eb.or([eb("actor_id", "=", actor), eb("actor_label", "ilike", like(actor))]));
      }
      if (q.q !== undefined) {
        const text = like(q.q);
        query = query.where((eb) =>
          eb.or([eb("object", "ilike", text), eb("path", "ilike", text), eb("action", "ilike", text), eb("actor_label", "ilike", text), eb(sql<string>`detail::text`, "ilike", text)]),
        );
      }
      const rows = await query.execute();
      return rows.map((r) => ({
        id: String(r.id),
        at: r.at.toISOString(),
        tenant: r.tenant,
        actor: { kind: r.actor_kind, id: r.actor_id, ...(r.actor_label === null ? {} : { label: r.actor_label }) },
        address: r.address,
        service: r.service,
        action: r.action,
        object: r.object,
        method: r.method,
        path: r.path,
        status: r.status,
        detail: r.detail ?? null,
      }));
    },

    /** Removes entries older than `before`, a batch at a time so a long backlog never holds one long lock; answers how many. */
    async purge(before: Date, batch = 5000): Promise<number> {
      let total = 0;
      for (;;) {
        const r = await sql<{ n: number }>`with gone as (
            delete from ${sql.id(AUDIT_SCHEMA, "entries")} where id in (
              select id from ${sql.id(AUDIT_SCHEMA, "entries")} where at < ${before} order by id limit ${batch})
            returning 1)
          select count(*)::int as n from gone`.execute(root);
        const n = r.rows[0]?.n ?? 0;
        total += n;
        if (n < batch) return total;
      }
    },
  };
}
export type AuditStore = ReturnType<typeof auditStoreFactory>;
