import type { FastifyInstance } from "fastify";
import { ADMIN_INTERNAL, forbidden, invalid, notFound, type RateLimitsDoc } from "@svc/contracts";
import { isTenant } from "@svc/keys";
import { errorResponses as errors, aggregateMetrics, type Bus, type ControlSubjects, type LogReply, type ServiceMetrics, type Settings } from "@svc/kit";
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


export function operationsRoutes(app: FastifyInstance, deps: OperationsDeps): void {
  const own = settingsDigest(deps.settings);
  const gatherMs = deps.gatherMs ?? 400;

  app.get("/api/posture", async () => {
    const advisories = computePosture(deps.settings, deps.nodes.live(), own);
    return { count: advisories.length, advisories };
  });

  app.get<{ Querystring: { level?: string; q?: string; limit?: string; after?: string } }>(
    "/api/logs",
    {
      schema: {
        querystring: {
          type: "object",
          properties: { level: { type: "string" }, q: { type: "string", maxLength: 200 }, limit: { type: "string" }, after: { type: "string", maxLength: 20_000 } },
          additionalProperties: false,
        },
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
  app.get("/metrics", async (_req, reply) => {
    const replies = (await deps.bus.gather(deps.control.metrics, {}, gatherMs)) as { node: string; metrics: unknown[] }[];
    const perProcess = [await deps.metrics.registry.getMetricsAsJSON(), ...replies.filter((r) => r && r.node !== deps.metrics.node && Array.isArray(r.metrics)).map((r) => r.metrics)];
    reply.type("text/plain; version=0.0.4; charset=utf-8");
    return aggregateMetrics(perProcess as unknown[][]);
  });

  app.get("/api/rate-limits", async () => {
    const rows = await deps.limits.list();
    return { default: deps.settings.rateLimit, tenants: rows.map((r) => ({ tenant: r.tenant, requestsPerMinute: r.requests_per_minute })) };
  });

  app.put<{ Params: { tenant: string }; Body: { requestsPerMinute: number } }>(
    "/api/rate-limits/:tenant",
    {
      schema: {
        body: {
          type: "object",
          properties: { requestsPerMinute: { type: "integer", minimum: 0, maximum: 100_000_000 } },
          required: ["requestsPerMinute"],
          additionalProperties: false,
        },
        response: { 200: { type: "object", properties: { tenant: { type: "string" }, requestsPerMinute: { type: "integer" } } }, ...errors },
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

  app.delete<{ Params: { tenant: string } }>("/api/rate-limits/:tenant", async (req, reply) => {
    if (!(await deps.limits.remove(req.params.tenant))) throw notFound(`no rate-limit override for tenant ${req.params.tenant}`);
    deps.bus.announce(deps.control.limits, { tenant: req.params.tenant });
    req.log.info({ tenant: req.params.tenant, principal: req.principal.id }, "rate limit override removed");
    return reply.code(204).send();
  });

  app.get(ADMIN_INTERNAL.rateLimits, async (req): Promise<RateLimitsDoc> => {
    if (req.principal.kind !== "system") throw forbidden("internal route");
    const rows = await deps.limits.list();
    return { default: deps.settings.rateLimit, tenants: Object.fromEntries(rows.map((r) => [r.tenant, r.requests_per_minute])) };
  });
}
