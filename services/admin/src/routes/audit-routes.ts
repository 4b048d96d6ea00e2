import { Type } from "@sinclair/typebox";
import { invalid } from "@svc/contracts";
import { Answer, errorResponses, readLimit, type ServiceApp } from "@svc/kit";
import type { AuditQuery, AuditStore } from "../store/audit-store.js";

/** A page of the audit trail when `limit` is not given. */
export const AUDIT_PAGE = 50;

const entrySchema = Answer({
  id: Type.String({ description: "the entry's id; pass it as `after` for the entries before it" }),
  at: Type.String({ description: "when the change was answered (ISO 8601)" }),
  tenant: Type.String(),
  actor: Answer({ kind: Type.String({ description: "key, person or system" }), id: Type.String(), label: Type.Optional(Type.String({ description: "the key's label, when a key with one made the change" })) }),
  address: Type.Union([Type.String(), Type.Null()], { description: "the client address the gateway saw (svc.trusted-proxies applied)" }),
  service: Type.String({ description: "the service that made the change" }),
  action: Type.String({ description: "what was done, e.g. key.issue, key.grant.set, repository.create, setting.change" }),
  object: Type.Union([Type.String(), Type.Null()], { description: "what it was done to: a key id, a repository, a setting, a person, a group" }),
  method: Type.String(),
  path: Type.String(),
  status: Type.Integer(),
  detail: Type.Unknown({ description: "what the request said (route parameters, query and body), secrets censored" }),
});

const querySchema = Type.Object(
  {
    limit: Type.Optional(Type.String({ description: `1-500; default ${AUDIT_PAGE}` })),
    after: Type.Optional(Type.String({ maxLength: 20, description: "the cursor: the id of the last entry of the previous page (X-Next-Cursor)" })),
    actor: Type.Optional(Type.String({ maxLength: 300, description: "a principal id, part of a key's label, or <kind>:<tenant>:<id>" })),
    action: Type.Optional(Type.String({ maxLength: 100, description: "an action, or its start up to a dot (key finds key.issue, key.revoke, …)" })),
    q: Type.Optional(Type.String({ maxLength: 300, description: "text in the object, path, action, key label or request detail" })),
    since: Type.Optional(Type.String({ maxLength: 64, description: "entries at or after this instant (ISO 8601)" })),
    until: Type.Optional(Type.String({ maxLength: 64, description: "entries before this instant (ISO 8601)" })),
  },
  { additionalProperties: false },
);

const INSTANT = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

function instant(field: string, text: string | undefined): Date | undefined {
  if (text === undefined || text === "") return undefined;
  const at = INSTANT.test(text) ? new Date(text) : undefined;
  if (!at || Number.isNaN(at.getTime())) throw invalid(field, `${field} must be an ISO 8601 date or instant, e.g. 2026-11-29 or 2026-11-29T14:00:00Z`);
  return at;
}

const optional = (text: string | undefined) => (text === undefined || text.trim() === "" ? undefined : text.trim());

/** Reads the query of GET /api/audit; throws a 400 naming the parameter that is wrong. */
export function readAuditQuery(q: { limit?: string; after?: string; actor?: string; action?: string; q?: string; since?: string; until?: string }): AuditQuery {
  const limit = q.limit === undefined ? AUDIT_PAGE : readLimit(q.limit);
  const after = optional(q.after);
  if (after !== undefined && !/^\d{1,18}$/.test(after)) throw invalid("after", "after must be the id of an entry (the X-Next-Cursor of the previous page)");
  const action = optional(q.action);
  if (action !== undefined && !/^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/.test(action)) throw invalid("action", "action must be an action name such as key.issue, or its start such as key");
  const since = instant("since", q.since);
  const until = instant("until", q.until);
  if (since && until && since >= until) throw invalid("until", "until must be later than since");
  return { limit, after, action, actor: optional(q.actor), q: optional(q.q), since, until };
}

/** `GET /api/audit`: the audit trail, newest first, paged and searchable (docs/operations/audit-trail.md). */
export function auditRoutes(app: ServiceApp, deps: { store: Pick<AuditStore, "search"> }): void {
  app.get(
    "/api/audit",
    {
      schema: {
        summary: "The audit trail: every change made through the API (who, what, when, from which address), newest first; X-Next-Cursor while more remain",
        querystring: querySchema,
        response: { 200: Answer({ entries: Type.Array(entrySchema) }), ...errorResponses(400) },
      },
    },
    async (req, reply) => {
      const query = readAuditQuery(req.query);
      const entries = await deps.store.search(query);
      reply.header("cache-control", "no-store");
      if (entries.length === query.limit) reply.header("x-next-cursor", entries[entries.length - 1]!.id);
      return { entries };
    },
  );
}
