import { EmptyBody, errorResponses, type ServiceApp } from "@svc/kit";
import type { CacheReport } from "../domain/cache-report.js";

// Plain JSON Schema: the gateway does not depend on TypeBox for its only two routes of its own.
const string = { type: "string" } as const;
const integer = { type: "integer" } as const;
const cacheSchema = { type: "object", properties: { name: string, description: string, ttlSeconds: integer, hits: integer, misses: integer, size: integer } } as const;
const listSchema = { type: "object", properties: { node: string, caches: { type: "array", items: cacheSchema } } } as const;
const clearedSchema = { type: "object", properties: { node: string, cleared: { type: "array", items: string }, announced: { type: "boolean" } } } as const;

/**
 * The gateway's own routes (the only ones it answers itself): the read caches of the node that
 * receives the request. The admission has already required manage:read over * (GET) or
 * manage:write over * (POST), like every /api/ route.
 */
export function cacheRoutes(app: ServiceApp, deps: { node: string; caches: CacheReport }): void {
  app.get(
    "/api/caches",
    { schema: { response: { 200: listSchema, ...errorResponses() } } },
    async (_req, reply) => {
      reply.header("cache-control", "no-store");
      return { node: deps.node, caches: deps.caches.list() };
    },
  );

  app.post(
    "/api/caches/clear",
    {
      schema: {
        body: EmptyBody,
        response: { 200: clearedSchema, ...errorResponses(400, 413, 415) },
      },
    },
    async (req) => {
      const outcome = await deps.caches.clear();
      req.log.info({ principal: req.forwardedPrincipal, announced: outcome.announced }, "caches cleared on this node");
      return { node: deps.node, ...outcome };
    },
  );
}
