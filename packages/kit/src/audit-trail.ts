import { sql, type ColumnType, type Generated, type Kysely, type Migration } from "kysely";
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler } from "fastify";
import { CLIENT_ADDRESS_HEADER, KEY_LABEL_HEADER, type AuditChange } from "@svc/contracts";
import { scrubSecrets } from "./logger.js";

/**
 * The audit trail (docs/operations/audit-trail.md): one row per change an administrator or a
 * key made through the API, in the `audit` schema. Every service that owns changeable state
 * appends to it from its own process (the table is append-only for them); the admin service
 * answers `GET /api/audit` from it and purges what is older than `svc.audit-retention`.
 *
 * An entry is written after the change's handler answered 2xx and before that answer is sent:
 * the client sees success only once the entry is committed, so a change answered 2xx always
 * has its entry, whatever restarts or NATS outages follow. If the entry cannot be written the
 * answer is a 500 (with a failure reference, and the entry in the error log line).
 */
export const AUDIT_SCHEMA = "audit";

export interface AuditEntriesTable {
  id: Generated<string>;
  at: ColumnType<Date, Date | undefined, never>;
  tenant: string;
  actor_kind: string;
  actor_id: string;
  actor_label: string | null;
  address: string | null;
  service: string;
  action: string;
  object: string | null;
  method: string;
  path: string;
  status: number;
  detail: ColumnType<unknown, string | null, never>;
}
export interface AuditDatabase {
  entries: AuditEntriesTable;
}

export const auditMigrations: Record<string, Migration> = {
  "0001_entries": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .withSchema(AUDIT_SCHEMA)
        .createTable("entries")
        .addColumn("id", "bigserial", (c) => c.primaryKey())
        .addColumn("at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
        .addColumn("tenant", "text", (c) => c.notNull())
        .addColumn("actor_kind", "text", (c) => c.notNull())
        .addColumn("actor_id", "text", (c) => c.notNull())
        .addColumn("actor_label", "text")
        .addColumn("address", "text")
        .addColumn("service", "text", (c) => c.notNull())
        .addColumn("action", "text", (c) => c.notNull())
        .addColumn("object", "text")
        .addColumn("method", "text", (c) => c.notNull())
        .addColumn("path", "text", (c) => c.notNull())
        .addColumn("status", "integer", (c) => c.notNull())
        .addColumn("detail", "jsonb")
        .execute();
      // Purges go by time; pages go by id (newest first), which the primary key serves.
      await db.schema.withSchema(AUDIT_SCHEMA).createIndex("entries_at").on("entries").column("at").execute();
      await db.schema.withSchema(AUDIT_SCHEMA).createIndex("entries_actor").on("entries").columns(["actor_id", "id"]).execute();
      await db.schema.withSchema(AUDIT_SCHEMA).createIndex("entries_action").on("entries").columns(["action", "id"]).execute();
    },
  },
};

/** How a service names its changes: `"<METHOD> <route url>"` → action (`"DELETE /api/credentials/:id"` → `key.revoke`). */
export interface AuditSpec {
  actions?: Record<string, string>;
  /** What the entry keeps of a request, where the default (params, query and body, secrets censored) would say too much. */
  detail?: Record<string, (request: FastifyRequest) => unknown>;
}

/** An entry as a service writes it: the change (as GET /api/audit answers it) and who made it. */
export interface AuditRecord extends AuditChange {
  tenant: string;
  actorKind: string;
  actorId: string;
  actorLabel: string | null;
}

export function auditWriterFactory(db: Kysely<AuditDatabase>) {
  return {
    async record(e: AuditRecord): Promise<void> {
      await db
        .withSchema(AUDIT_SCHEMA)
        .insertInto("entries")
        .values({
          tenant: e.tenant,
          actor_kind: e.actorKind,
          actor_id: e.actorId,
          actor_label: e.actorLabel,
          address: e.address,
          service: e.service,
          action: e.action,
          object: e.object,
          method: e.method,
          path: e.path,
          status: e.status,
          detail: e.detail === undefined ? null : JSON.stringify(e.detail),
        })
        .execute();
    },
  };
}
export type AuditWriter = ReturnType<typeof auditWriterFactory>;

/** Where a service's app finds its writer: set by bootService once the database is there (none in unit tests). */
export interface AuditSink {
  writer?: Pick<AuditWriter, "record">;
  service: string;
  spec: AuditSpec;
}

const CHANGES = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const VERB: Record<string, string> = { POST: "create", PUT: "set", PATCH: "change", DELETE: "remove" };
/** Field names that hold secrets (`secret`, `clientSecret`, `password`, `accessToken`, `key`); not `tokens`, a grant's rights. */
const SECRET_FIELD = /(?:secret|password|passwd|passphrase|token|apikey|authorization|cookie)$|^key$/i;
const DETAIL_MAX = 8192;

/**
 * The action of a route no service named: its literal segments and a verb
 * (`PATCH /api/build-caches/:name` → `build-caches.change`); a POST ending in a second word is
 * that word (`POST /api/held/:id/release` → `held.release`, `POST /api/walks/run` → `walks.run`).
 */
export function defaultAuditAction(method: string, url: string): string {
  const segments = url.replace(/^\/api\/?/, "").split("/").filter((s) => s !== "");
  const words = segments.filter((s) => !s.startsWith(":") && s !== "*");
  if (method === "POST" && words.length > 1 && words[words.length - 1] === segments[segments.length - 1]) return words.join(".");
  return [...words, VERB[method] ?? method.toLowerCase()].join(".");
}

/** A request's parts as an entry keeps them: fields that hold secrets censored, URL passwords and keys masked. */
export function censored(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return scrubSecrets(value);
  if (value === null || typeof value !== "object") return value;
  if (depth > 8) return "[nested]";
  if (Array.isArray(value)) return value.map((v) => censored(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_FIELD.test(k) && v !== null && v !== "" ? "[redacted]" : censored(v, depth + 1);
  return out;
}

function nonEmpty(o: unknown): o is Record<string, unknown> {
  return o !== null && typeof o === "object" && Object.keys(o).length > 0;
}

function firstName(...sources: unknown[]): string | null {
  for (const s of sources) {
    if (s === null || typeof s !== "object") continue;
    for (const k of ["name", "id"]) {
      const v = (s as Record<string, unknown>)[k];
      if (typeof v === "string" && v !== "") return v;
    }
  }
  return null;
}

/** The route's first parameter (`:id`, `:name`, `:tenant`): what the change is to. */
function firstParam(params: Record<string, unknown> | undefined): string | null {
  for (const v of Object.values(params ?? {})) if (typeof v === "string" && v !== "") return v;
  return null;
}

function answered(payload: unknown, reply: FastifyReply): unknown {
  if (typeof payload !== "string" || payload.length > 65_536 || !/json/i.test(String(reply.getHeader("content-type") ?? ""))) return undefined;
  try {
    return JSON.parse(payload);
  } catch {
    return undefined;
  }
}

/** The entry a change answered 2xx makes. */
export function auditRecordOf(request: FastifyRequest, status: number, payload: unknown, reply: FastifyReply, sink: Pick<AuditSink, "service" | "spec">): AuditRecord {
  const route = `${request.method} ${request.routeOptions.url ?? request.url}`;
  const params = request.params as Record<string, unknown> | undefined;
  const query = request.query as Record<string, unknown> | undefined;
  const body = request.body;
  const own = sink.spec.detail?.[route];
  let detail: unknown = own ? own(request) : censored({ ...(nonEmpty(params) ? { params } : {}), ...(nonEmpty(query) ? { query } : {}), ...(body !== undefined && body !== null ? { body } : {}) });
  if (detail !== undefined && JSON.stringify(detail).length > DETAIL_MAX) detail = { truncated: true };
  const q = request.url.indexOf("?");
  return {
    tenant: request.principal.tenant,
    actorKind: request.principal.kind,
    actorId: request.principal.id,
    actorLabel: request.keyLabel ?? null,
    address: request.clientAddress ?? null,
    service: sink.service,
    action: sink.spec.actions?.[route] ?? defaultAuditAction(request.method, request.routeOptions.url ?? request.url),
    object: firstParam(params) ?? firstName(query, body, answered(payload, reply)),
    method: request.method,
    path: q < 0 ? request.url : request.url.slice(0, q),
    status,
    detail,
  };
}

/**
 * Reads what the gateway signed about the caller besides the principal (the client address,
 * the key's label) and records each API change answered 2xx, before the answer leaves.
 */
export function installAuditTrail(app: FastifyInstance, sink: AuditSink): void {
  // Callback hooks, not async ones, and only on the routes they concern (below): the API's, whose
  // changes are recorded, and the console's pages, which pass the person's address on. Every
  // other request (an artifact's GET, an upload) runs none of it.
  const onRequest: onRequestHookHandler = (request, _reply, done) => {
    const address = request.headers[CLIENT_ADDRESS_HEADER];
    if (typeof address === "string") request.clientAddress = address;
    const label = request.headers[KEY_LABEL_HEADER];
    if (typeof label === "string") {
      try {
        request.keyLabel = decodeURIComponent(label);
      } catch {
        request.keyLabel = label;
      }
      // Every line this request logs names the key by its label as well as its id.
      request.log = request.log.child({ keyLabel: request.keyLabel });
    }
    done();
  };
  const onSend: onSendHookHandler = (request, reply, payload, done) => {
    const writer = sink.writer;
    if (!writer || !CHANGES.has(request.method) || !request.principal || reply.statusCode < 200 || reply.statusCode >= 300 || !request.url.startsWith("/api/")) return done(null, payload);
    const entry = auditRecordOf(request, reply.statusCode, payload, reply, sink);
    writer.record(entry).then(
      () => done(null, payload),
      (err: unknown) => {
        request.log.error({ err, audit: entry }, "could not record a change in the audit trail; answering 500");
        done(err as Error);
      },
    );
  };
  app.addHook("onRoute", (route) => {
    if (!route.url.startsWith("/api/") && !route.url.startsWith("/ui")) return;
    const own = <T>(h: T | T[] | undefined): T[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);
    route.onRequest = [...own(route.onRequest), onRequest] as never;
    route.onSend = [...own(route.onSend), onSend] as never;
  });
}

declare module "fastify" {
  interface FastifyRequest {
    /** The client address the gateway saw (upstream services; API requests). */
    clientAddress?: string;
    /** The label of the key that made the request, when it has one. */
    keyLabel?: string;
  }
}
