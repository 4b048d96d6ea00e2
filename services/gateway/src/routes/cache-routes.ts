import { EmptyBody, errorResponses, type ServiceApp } from "@svc/kit";
import type { CacheReport } from "../domain/cache-report.js";

// Plain JSON Schema: the gateway does not depend on TypeBox for its only two routes of its own.
const string = { type: "string" } as const;
const integer = { type: "integer" } as const;
const cacheSchema = { type: "object", properties: { name: string, description: string, ttlSeconds: integer, hits: integer, misses: integer, size: integer } } as const;
const buildCacheSchema = { type: "object", additionalProperties: true, properties: { name: string } } as const;
const listSchema = { type: "object", properties: { node: string, caches: { type: "array", items: cacheSchema }, buildCaches: { type: "array", items: buildCacheSchema } } } as const;

/** What identifies the caller, passed on to the build-cache listing asked for on its behalf. */
const CALLER_HEADERS = ["host", "service-repository-key", "authorization", "cookie", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"];
const clearedSchema = { type: "object", properties: { node: string, cleared: { type: "array", items: string }, announced: { type: "boolean" } } } as const;

/**
 * The gateway's own routes (the only ones it answers itself): the read caches of the node that
 * receives the request. The admission has already required manage:read over * (GET) or
 * manage:write over * (POST), like every /api/ route. The list also names the deployment's build
 * caches (`buildCaches`, the first page of GET /api/build-caches asked as the same caller): the
 * issue's `GET /api/caches` shows them, while `POST /api/caches` makes one (route-table.ts).
 */
export function cacheRoutes(app: ServiceApp, deps: { node: string; caches: CacheReport }): void {
  app.get(
    "/api/caches",
    { schema: { response: { 200: listSchema, ...errorResponses() } } },
    async (req, reply) => {
      reply.header("cache-control", "no-store");
      const headers: Record<string, string> = {};
      for (const h of CALLER_HEADERS) if (typeof req.headers[h] === "string") headers[h] = req.headers[h];
      // Through this gateway's own admission and proxy, as the caller: the artifacts service's answer, or none when it cannot give one.
      const build = await app.inject({ method: "GET", url: "/api/build-caches", headers, remoteAddress: req.ip }).catch(() => undefined);
      const buildCaches = build?.statusCode === 200 ? (build.json() as unknown[]) : [];
      return { node: deps.node, caches: deps.caches.list(), buildCaches };
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
