import { Type } from "@sinclair/typebox";
import { ADMIN_INTERNAL, forbidden, invalid, notFound, type RateLimitsDoc } from "@svc/contracts";
import { isTenant } from "@svc/keys";
import { Answer, NoContent, StringEnum, errorResponses, problemResponses, aggregateMetrics, type ServiceApp, type Bus, type ControlSubjects, type LogReply, type ServiceMetrics, type Settings } from "@svc/kit";
import { mergeLogs, readLogQuery } from "../domain/log-query.js";
import type { NodeRegistry } from "../domain/node-registry.js";
import { computePosture } from "../domain/posture.js";
import type { LimitStore } from "../store/limit-store.js";
import { settingsDigest } from "@svc/kit";

export interface OperationsDeps {
  settings: Settings;
  bus: Bus;
  control: ControlSubjects;
  nodes: NodeRegistry;
  limits: LimitStore;
  metrics: ServiceMetrics;
  /** This process's own log entries, answered locally so logs work with NATS down. */
  ownLogs: (q: ReturnType<typeof readLogQuery>) => LogReply;
  gatherMs?: number;
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
  const gatherMs = deps.gatherMs ?? 400;

  app.get(
    "/api/posture",
    { schema: { response: { 200: Answer({ count: Type.Integer(), advisories: Type.Array(advisorySchema) }), ...errorResponses() } } },
    async () => {
      const advisories = computePosture(deps.settings, deps.nodes.live(), own);
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
          },
          { additionalProperties: false },
        ),
        response: { 200: Answer({ entries: Type.Array(logEntry), next: Type.String() }), ...errorResponses(400) },
      },
    },
    async (req) => {
      const q = readLogQuery(req.query);
      const mine = deps.ownLogs(q);
      const others = (await deps.bus.gather(deps.control.logs, q, gatherMs)) as LogReply[];
      const replies = [mine, ...others.filter((r) => r && r.node !== mine.node && Array.isArray(r.entries))];
      return mergeLogs(replies, q);
    },
  );

  // Served to the gateway's /metrics (which requires manage:read over * of the operator tenant).
  app.get("/metrics", { schema: { response: { 200: Type.String({ description: "Prometheus text exposition format" }), ...errorResponses() } } }, async (_req, reply) => {
    const replies = (await deps.bus.gather(deps.control.metrics, {}, gatherMs)) as { node: string; metrics: unknown[] }[];
    const perProcess = [await deps.metrics.registry.getMetricsAsJSON(), ...replies.filter((r) => r && r.node !== deps.metrics.node && Array.isArray(r.metrics)).map((r) => r.metrics)];
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
      return { default: deps.settings.rateLimit, tenants: rows.map((r) => ({ tenant: r.tenant, requestsPerMinute: r.requests_per_minute })) };
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
      await deps.limits.set(req.params.tenant, req.body.requestsPerMinute);
      deps.bus.announce(deps.control.limits, { tenant: req.params.tenant });
      req.log.info({ tenant: req.params.tenant, requestsPerMinute: req.body.requestsPerMinute, principal: req.principal.id }, "rate limit override set");
      return { tenant: req.params.tenant, requestsPerMinute: req.body.requestsPerMinute };
    },
  );

  app.delete(
    "/api/rate-limits/:tenant",
    { schema: { params: tenantParam, response: { 204: NoContent, ...errorResponses(404) } } },
    async (req, reply) => {
      if (!(await deps.limits.remove(req.params.tenant))) throw notFound(`no rate-limit override for tenant ${req.params.tenant}`);
      deps.bus.announce(deps.control.limits, { tenant: req.params.tenant });
      req.log.info({ tenant: req.params.tenant, principal: req.principal.id }, "rate limit override removed");
      return reply.code(204).send();
    },
  );

  app.get(
    ADMIN_INTERNAL.rateLimits,
    {
      schema: {
        response: {
          200: Answer({ default: Type.Integer(), tenants: Type.Unsafe<RateLimitsDoc["tenants"]>({ type: "object", additionalProperties: { type: "integer" } }) }),
          ...problemResponses(401, 403, 500),
        },
      },
    },
    async (req): Promise<RateLimitsDoc> => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      const rows = await deps.limits.list();
      return { default: deps.settings.rateLimit, tenants: Object.fromEntries(rows.map((r) => [r.tenant, r.requests_per_minute])) };
    },
  );
}
