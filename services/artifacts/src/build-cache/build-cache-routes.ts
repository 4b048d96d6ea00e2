import { Readable } from "node:stream";
import { Type } from "@sinclair/typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { LIMITS, ServiceError, invalid, notFound } from "@svc/contracts";
import { parseCacheTarget, type CacheTarget } from "@svc/grants";
import { Answer, NoContent, Nullable, errorResponses, pagingQuerySchema, readPaging, senderWentAway, setContentTypeAside, watchBodyIdle, type ServiceApp } from "@svc/kit";
import type { BuildCacheService } from "./build-cache-service.js";

/** How much longer than svc.upload-idle-timeout this service waits, at most, before cutting an upload (as raw-routes.ts). */
const IDLE_GRACE_MS = 5_000;
const BYTES_MAX = Number.MAX_SAFE_INTEGER;

const cacheSchema = Answer({
  name: Type.String(),
  maxBytes: Type.Integer({ description: "the cap: past it the least recently used entries are evicted" }),
  maxEntryBytes: Type.Integer({ description: "the largest entry the cache takes (a larger one is answered 413)" }),
  ownMaxBytes: Type.Boolean({ description: "false: maxBytes follows svc.build-cache.max-bytes" }),
  ownMaxEntryBytes: Type.Boolean({ description: "false: maxEntryBytes follows svc.build-cache.max-entry-bytes" }),
  usedBytes: Type.Integer({ description: "bytes of the entries held (content another cache or repository shares counted here too)" }),
  entries: Type.Integer(),
  created: Type.String({ format: "date-time" }),
});
const nameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
const size = (description: string) => Type.Integer({ minimum: 1, maximum: BYTES_MAX, description });
const createBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName, description: "letters, digits, '.', '_' and '-', as a repository name; the scope grants name" }),
    maxBytes: Type.Optional(size("the cache's cap in bytes; absent: svc.build-cache.max-bytes")),
    maxEntryBytes: Type.Optional(size("the largest entry in bytes; absent: svc.build-cache.max-entry-bytes")),
  },
  { additionalProperties: false },
);
const patchBody = Type.Object(
  {
    maxBytes: Type.Optional(Nullable(size("the new cap in bytes (a lower one evicts at once); null: back to svc.build-cache.max-bytes"))),
    maxEntryBytes: Type.Optional(Nullable(size("the largest entry in bytes; null: back to svc.build-cache.max-entry-bytes"))),
  },
  { additionalProperties: false },
);

/**
 * The build caches (docs/integration/build-caches.md): the caches' HTTP surface
 * (`/cache/<cache>/<key>`, the gateway having required cache:read or cache:write on the cache)
 * and their administration (`/api/build-caches`, manage:read or manage:write on `*`).
 */
export function buildCacheRoutes(app: ServiceApp, deps: { caches: BuildCacheService; uploadIdleTimeoutMs: number }): void {
  const { caches } = deps;

  app.register(async (scoped: FastifyInstance) => {
    // An entry streams to the blob store as an artifact does: never parsed, never held in memory.
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
    scoped.addHook("onRequest", (req, _reply, done) => {
      if (req.method !== "GET" && req.method !== "HEAD") setContentTypeAside(req);
      done();
    });

    const entryOf = (req: FastifyRequest): CacheTarget => {
      const t = parseCacheTarget(req.url);
      if (t.key === "") throw invalid("key", `a key is required after the cache name: /cache/${t.cache}/<key>`);
      return t;
    };
    const miss = (t: CacheTarget) => notFound(`build cache ${t.cache} holds no entry ${t.key}`);

    scoped.route({
      method: ["GET", "HEAD"],
      url: "/cache/*",
      exposeHeadRoute: false,
      handler: async (req, reply) => {
        const t = entryOf(req);
        const got = await caches.read(t.cache, t.key, req.method === "GET");
        if (!got) throw miss(t);
        reply.header("content-type", "application/octet-stream").header("content-length", String(got.entry.size)).header("etag", `"${got.entry.sha256}"`).header("cache-control", "no-store");
        return reply.send(req.method === "GET" ? got.body : undefined);
      },
    });

    scoped.put("/cache/*", async (req: FastifyRequest, reply: FastifyReply) => {
      const t = entryOf(req);
      const idle = deps.uploadIdleTimeoutMs;
      watchBodyIdle(req, reply, idle + Math.min(idle, IDLE_GRACE_MS), () => {
        req.log.warn({ cache: t.cache, key: t.key, principal: req.principal.id }, "cut a build cache upload that stopped arriving (svc.upload-idle-timeout)");
        req.raw.destroy(new ServiceError("request_timeout", "the upload stopped arriving (svc.upload-idle-timeout): nothing was stored"));
      });
      const declared = Number(req.headers["content-length"]);
      const body = req.body instanceof Readable ? req.body : req.raw;
      const stored = await caches.write(t.cache, t.key, body, Number.isSafeInteger(declared) ? declared : undefined).catch((err: unknown) => {
        if (!(err instanceof ServiceError) && senderWentAway(req.raw)) throw new ServiceError("invalid_input", "the request body ended early: nothing was stored");
        throw err;
      });
      req.log.info({ cache: t.cache, key: t.key, size: stored.size, principal: req.principal.id }, "build cache entry stored");
      return reply.code(stored.created ? 201 : 200).send({ cache: t.cache, key: t.key, size: stored.size, sha256: stored.sha256 });
    });

    scoped.delete("/cache/*", async (req, reply) => {
      const t = entryOf(req);
      if (!(await caches.removeEntry(t.cache, t.key))) throw miss(t);
      return reply.code(204).send();
    });
  });

  app.get(
    "/api/build-caches",
    { schema: { summary: "The build caches, by name", querystring: pagingQuerySchema, response: { 200: Type.Array(cacheSchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      const all = (await caches.list()).filter((c) => after === undefined || c.name > after);
      const page = all.slice(0, limit);
      if (all.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.name);
      return page;
    },
  );

  app.post(
    "/api/build-caches",
    { schema: { summary: "Creates a build cache with its caps", body: createBody, response: { 201: cacheSchema, ...errorResponses(400, 409, 413, 415) } } },
    async (req, reply) => {
      const name = req.body.name;
      parseCacheTarget(`/cache/${encodeURIComponent(name)}`);
      const made = await caches.create(name, { maxBytes: req.body.maxBytes, maxEntryBytes: req.body.maxEntryBytes });
      req.log.info({ cache: name, maxBytes: made.maxBytes, maxEntryBytes: made.maxEntryBytes, principal: req.principal.id }, "build cache created");
      return reply.code(201).header("location", `/api/build-caches/${encodeURIComponent(name)}`).send(made);
    },
  );

  app.get("/api/build-caches/:name", { schema: { params: nameParam, response: { 200: cacheSchema, ...errorResponses(400, 404) } } }, async (req) => caches.show(req.params.name));

  app.patch(
    "/api/build-caches/:name",
    { schema: { summary: "Changes a build cache's caps", params: nameParam, body: patchBody, response: { 200: cacheSchema, ...errorResponses(400, 404, 413, 415) } } },
    async (req) => {
      const changed = await caches.update(req.params.name, req.body);
      req.log.info({ cache: req.params.name, maxBytes: changed.maxBytes, maxEntryBytes: changed.maxEntryBytes, principal: req.principal.id }, "build cache changed");
      return changed;
    },
  );

  app.delete(
    "/api/build-caches/:name",
    { schema: { summary: "Removes a build cache and its entries", params: nameParam, response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      await caches.removeCache(req.params.name);
      req.log.info({ cache: req.params.name, principal: req.principal.id }, "build cache removed");
      return reply.code(204).send();
    },
  );
}
