import { STATUS_CODES } from "node:http";
import { fastifySwagger } from "@fastify/swagger";
import type { FastifyInstance } from "fastify";
import { PROBLEM_CONTENT_TYPE } from "@svc/contracts";

/**
 * Each service behind the gateway describes its public `/api/...` routes as an OpenAPI document
 * built from the routes' own schemas, and keeps, apart from the generator, the list of routes
 * fastify registered: the admin service merges the documents and a test holds them against
 * that list. Both travel over the control plane (node-agent.ts).
 */

/** A route as fastify registered it: its method, its path in fastify's syntax, the statuses its schema declares. */
export interface ApiRoute {
  method: string;
  url: string;
  statuses: string[];
}

export interface OpenApiOperation {
  tags?: string[];
  responses?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; [field: string]: unknown };
  paths?: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, unknown>; [field: string]: unknown };
  [field: string]: unknown;
}

/** One process's answer: its document (null when it has none yet, e.g. still starting) and its registered routes. */
export interface ApiReport {
  node: string;
  service: string;
  document: OpenApiDocument | null;
  routes: ApiRoute[];
  error?: string;
}

export interface ApiSource {
  document(): OpenApiDocument;
  routes(): ApiRoute[];
}

export const OPENAPI_VERSION = "3.1.0";

export function isPublicApiPath(url: string): boolean {
  return url.startsWith("/api/");
}

/** fastify's `/a/:id/*` as an OpenAPI path template `/a/{id}/{*}` (as @fastify/swagger writes it). */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, "{$1}").replace(/\*/g, "{*}");
}

// Keyed by the process's meters, which its app and its node agent share (see createBaseApp).
const sources = new WeakMap<object, ApiSource>();

/**
 * Makes `app` describe its `/api/...` routes (not `/internal/`, not `/health/`), with the
 * shared problem schema as a component under its own `$id`. Call it before any route is
 * declared. `owner` is the key the node agent finds the description under.
 */
export function describeApi(app: FastifyInstance, owner?: { service: string }): ApiSource {
  const routes: ApiRoute[] = [];
  app.addHook("onRoute", (r) => {
    if (!isPublicApiPath(r.url)) return;
    const statuses = Object.keys((r.schema?.response as Record<string, unknown> | undefined) ?? {});
    // HEAD routes are the ones fastify adds beside each GET: the document leaves them out too.
    for (const method of [r.method].flat()) if (method !== "HEAD") routes.push({ method, url: r.url, statuses });
  });
  // Called, not registered: a registered plugin is loaded only when the app boots, after the
  // service has declared its routes, and its onRoute hook would see none of them.
  fastifySwagger(
    app,
    {
      openapi: { openapi: OPENAPI_VERSION, info: { title: owner?.service ?? "service", version: "1" } },
      refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`) },
      transform: ({ schema, url }) => ({ schema: isPublicApiPath(url) ? schema : { ...schema, hide: true }, url }),
      transformObject: (d) => problemMediaType(("openapiObject" in d ? d.openapiObject : d.swaggerObject) as unknown as OpenApiDocument) as never,
    },
    (err) => {
      if (err) throw err;
    },
  );
  const source: ApiSource = { document: () => app.swagger() as unknown as OpenApiDocument, routes: () => routes.slice() };
  if (owner) sources.set(owner, source);
  return source;
}

/**
 * The error handler answers every refusal and failure on the API as a problem document
 * (errors.ts); the generator would call it application/json.
 */
function problemMediaType(doc: OpenApiDocument): OpenApiDocument {
  for (const operations of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(operations)) {
      for (const [status, response] of Object.entries(op.responses ?? {}) as [string, { description?: string; content?: Record<string, unknown> }][]) {
        if (!/^[45]/.test(status)) continue;
        response.description = STATUS_CODES[status] ?? response.description;
        const json = response.content?.["application/json"];
        if (json) response.content = { [PROBLEM_CONTENT_TYPE]: json };
      }
    }
  }
  return doc;
}

/** What this process answers about its API: nothing described (the gateway's routes only forward) is an empty report. */
export function apiReport(owner: { node: string; service: string }): ApiReport {
  const source = sources.get(owner);
  const base = { node: owner.node, service: owner.service };
  if (!source) return { ...base, document: null, routes: [] };
  try {
    return { ...base, document: source.document(), routes: source.routes() };
  } catch (err) {
    // Before the app is ready the generator cannot run yet.
    return { ...base, document: null, routes: source.routes(), error: (err as Error).message };
  }
}
