import { Type } from "@sinclair/typebox";
import { ADMIN_INTERNAL, forbidden, invalid, notFound, rateLimitsDocSchema, type RateLimitsDoc } from "@svc/contracts";
import { isTenant } from "@svc/keys";
import { Answer, NoContent, StringEnum, errorResponses, problemResponses, aggregateMetrics, settingsDigest, type ServiceApp, type LogReply, type ServiceMetrics, type Settings } from "@svc/kit";
import { mergeLogs, readLogQuery } from "../domain/log-query.js";
import type { NodeRegistry } from "../domain/node-registry.js";
import type { ContentCheck } from "../domain/content-check.js";
import { computePosture } from "../domain/posture.js";
import type { LiveSettings } from "../domain/live-settings.js";
import type { NodeControl } from "../messaging/node-control.js";
import type { LimitStore } from "../store/limit-store.js";

export interface OperationsDeps {
  settings: Settings;
  /** The settings with the run-time values stored in Postgres laid over them: the posture and the rate ceiling follow these. */
  live: Pick<LiveSettings, "fresh" | "forTenant">;
  /** The other nodes, over the control subjects. */
  peers: Pick<NodeControl, "gatherLogs" | "gatherMetrics" | "announceLimitsChanged">;
  nodes: Pick<NodeRegistry, "live">;
  /** The artifacts nodes' content compared (svc.nodes.content-differs); cached, read-only. */
  content?: Pick<ContentCheck, "advisories">;
  limits: LimitStore;
  metrics: ServiceMetrics;
  /** This process's own log entries, answered locally so logs work with NATS down. */
  ownLogs: (q: ReturnType<typeof readLogQuery>) => LogReply;
}

const advisorySchema = Answer({
  name: Type.String(),
  severity: StringEnum(["critical", "warning"]),
  summary: Type.String(),
  why: Type.String(),
  setting: Type.String(),
  remedy: Type.String(),
  nodes: Type.Array(Type.String()),
});
// Entries pass whole: each carries seq, time, level, service, msg and the fields it was logged with.
const logEntry = Type.Unknown({ description: "a log entry: seq, time, level, service, msg and the fields it was logged with" });
const tenantParam = Type.Object({ tenant: Type.String() });

export function operationsRoutes(app: ServiceApp, deps: OperationsDeps): void {
  const own = settingsDigest(deps.settings);

  app.get(
    "/api/posture",
    { schema: { response: { 200: Answer({ count: Type.Integer(), advisories: Type.Array(advisorySchema) }), ...errorResponses() } } },
    async () => {
      // The served tenant's values: its per-tenant overrides (PUT /api/settings/<name>?tenant=) over the deployment's.
      const live = await deps.live.fresh();
      const advisories = computePosture(deps.live.forTenant(live.tenant), deps.nodes.live(), own, (await deps.content?.advisories()) ?? []);
      return { count: advisories.length, advisories };
    },
  );

  app.get(
    "/api/logs",
    {
      schema: {
        querystring: Type.Object(
          {
            level: Type.Optional(Type.String()),
            q: Type.Optional(Type.String({ maxLength: 200 })),
            limit: Type.Optional(Type.String()),
            after: Type.Optional(Type.String({ maxLength: 20_000 })),
            category: Type.Optional(Type.String({ maxLength: 20 })),
            service: Type.Optional(Type.String({ maxLength: 200, description: "only these services' entries: a service name, or several separated by commas" })),
          },
          { additionalProperties: false },
        ),
        response: { 200: Answer({ entries: Type.Array(logEntry), next: Type.String() }), ...errorResponses(400) },
      },
    },
    async (req) => {
      const q = readLogQuery(req.query);
      const mine = deps.ownLogs(q);
      return mergeLogs([mine, ...(await deps.peers.gatherLogs(q))], q);
    },
  );

  // Served to the gateway's /metrics (which requires manage:read over * of the operator tenant).
  app.get("/metrics", { schema: { response: { 200: Type.String({ description: "Prometheus text exposition format" }), ...errorResponses() } } }, async (_req, reply) => {
    const others = await deps.peers.gatherMetrics();
    const perProcess = [await deps.metrics.snapshot(), ...others.map((r) => r.metrics)];
    reply.type("text/plain; version=0.0.4; charset=utf-8");
    return aggregateMetrics(perProcess as unknown[][]);
  });

  app.get(
    "/api/rate-limits",
    {
      schema: {
        response: {
          200: Answer({ default: Type.Integer(), tenants: Type.Array(Answer({ tenant: Type.String(), requestsPerMinute: Type.Integer() })) }),
          ...errorResponses(),
        },
      },
    },
    async () => {
      const rows = await deps.limits.list();
      return { default: (await deps.live.fresh()).rateLimit, tenants: rows.map((r) => ({ tenant: r.tenant, requestsPerMinute: r.requests_per_minute })) };
    },
  );

  app.put(
    "/api/rate-limits/:tenant",
    {
      schema: {
        params: tenantParam,
        body: Type.Object({ requestsPerMinute: Type.Integer({ minimum: 0, maximum: 100_000_000 }) }, { additionalProperties: false }),
        response: { 200: Answer({ tenant: Type.String(), requestsPerMinute: Type.Integer() }), ...errorResponses(400, 413, 415) },
      },
    },
    async (req) => {
      if (!isTenant(req.params.tenant)) throw invalid("tenant", "a tenant is 1-63 lowercase letters, digits and inner hyphens");
      // An override for a tenant nobody here serves would be stored and never applied: say so.
      if (req.params.tenant !== deps.settings.tenant) throw invalid("tenant", `this deployment serves tenant "${deps.settings.tenant}" only (svc.tenant)`);
      await deps.limits.set(req.params.tenant, req.body.requestsPerMinute);
      deps.peers.announceLimitsChanged(req.params.tenant);
      req.log.info({ tenant: req.params.tenant, requestsPerMinute: req.body.requestsPerMinute, principal: req.principal.id }, "rate limit override set");
      return { tenant: req.params.tenant, requestsPerMinute: req.body.requestsPerMinute };
    },
  );

  app.delete(
    "/api/rate-limits/:tenant",
    { schema: { params: tenantParam, response: { 204: NoContent, ...errorResponses(404) } } },
    async (req, reply) => {
      if (!(await deps.limits.remove(req.params.tenant))) throw notFound(`no rate-limit override for tenant ${req.params.tenant}`);
      deps.peers.announceLimitsChanged(req.params.tenant);
      req.log.info({ tenant: req.params.tenant, principal: req.principal.id }, "rate limit override removed");
      return reply.code(204).send();
    },
  );

  app.get(
    ADMIN_INTERNAL.rateLimits,
    {
      schema: {
        response: {
          200: rateLimitsDocSchema,
          ...problemResponses(401, 403, 500),
        },
      },
    },
    async (req): Promise<RateLimitsDoc> => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      const rows = await deps.limits.list();
      return { default: (await deps.live.fresh()).rateLimit, tenants: Object.fromEntries(rows.map((r) => [r.tenant, r.requests_per_minute])) };
    },
  );
}
