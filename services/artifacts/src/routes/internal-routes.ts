import type { FastifyInstance, FastifyRequest } from "fastify";
import { forbidden, invalid } from "@svc/contracts";
import { actorOf, type ArtifactService } from "../domain/artifact-service.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { addressOf } from "./address.js";
import { errorResponses as errors } from "@svc/kit";

export interface InternalRoutesDeps {
  artifacts: ArtifactService;
  metadata: Pick<MetadataStore, "repositories" | "page">;
  repositories: () => ReadonlySet<string>;
}

const systemOnly = (req: FastifyRequest) => {
  if (req.principal.kind !== "system") throw forbidden("internal route");
};

const where = { repository: { type: "string", minLength: 1, maxLength: 200 }, path: { type: "string", minLength: 1, maxLength: 1024 } } as const;
const hex64 = { type: "string", pattern: "^[0-9a-f]{64}$" } as const;

/**
 * Routes only other services call (signed as a system principal), never proxied from outside:
 * what the walker needs to walk the store without touching this service's tables.
 */
export function internalRoutes(app: FastifyInstance, deps: InternalRoutesDeps): void {
  app.get("/internal/repositories", async (req) => {
    systemOnly(req);
    return deps.metadata.repositories();
  });

  /** A repository's metadata in byte order of the path, the order a walk reads the tree in. */
  app.get<{ Params: { name: string }; Querystring: { after?: string; limit?: string } }>(
    "/internal/repositories/:name/artifacts",
    {
      schema: {
        querystring: { type: "object", properties: { after: { type: "string", maxLength: 1024 }, limit: { type: "string", pattern: "^[0-9]{1,5}$" } }, additionalProperties: false },
        response: {
          200: {
            type: "array",
            items: {
              type: "object",
              properties: {
                path: { type: "string" },
                size: { type: "integer" },
                sha256: { type: "string" },
                updated: { type: "string" },
                lastDownloaded: { type: ["string", "null"] },
                downloads: { type: "integer" },
                held: { type: "boolean" },
              },
            },
          },
          ...errors,
        },
      },
    },
    async (req, reply) => {
      systemOnly(req);
      const limit = Math.min(Math.max(Number(req.query.limit ?? 1000), 1), 5000);
      const rows = await deps.metadata.page(req.params.name, req.query.after || undefined, limit);
      if (rows.length === limit) reply.header("x-next-cursor", rows[rows.length - 1]!.path);
      return rows.map((r) => ({
        path: r.path,
        size: r.size,
        sha256: r.sha256,
        updated: r.updated.toISOString(),
        lastDownloaded: r.lastDownloaded?.toISOString() ?? null,
        downloads: r.downloads,
        held: r.heldReason !== null,
      }));
    },
  );

  app.post<{ Body: { repository: string; path: string; reason: "retention"; sha256: string; updated: string } }>(
    "/internal/artifacts/remove",
    {
      schema: {
        body: {
          type: "object",
          properties: { ...where, reason: { type: "string", enum: ["retention"] }, sha256: hex64, updated: { type: "string", maxLength: 40 } },
          required: ["repository", "path", "reason", "sha256", "updated"],
          additionalProperties: false,
        },
        response: { 200: { type: "object", properties: { removed: { type: "boolean" }, size: { type: "integer" }, why: { type: "string" } } }, ...errors },
      },
    },
    async (req) => {
      systemOnly(req);
      const b = req.body;
      const updated = Date.parse(b.updated);
      if (Number.isNaN(updated)) throw invalid("updated", "updated must be an ISO-8601 instant");
      const out = await deps.artifacts.removeForRetention(addressOf(b.repository, b.path, deps.repositories()), { sha256: b.sha256, updated }, actorOf(req.principal));
      if (out.removed) req.log.info({ repository: b.repository, path: b.path, size: out.size, principal: req.principal.id }, "artifact removed by retention");
      return out;
    },
  );

  app.post<{ Body: { repository: string; path: string; ino: number; size: number; mtimeMs: number; sha256: string } }>(
    "/internal/artifacts/index",
    {
      schema: {
        body: {
          type: "object",
          properties: { ...where, ino: { type: "integer", minimum: 0 }, size: { type: "integer", minimum: 0 }, mtimeMs: { type: "integer" }, sha256: hex64 },
          required: ["repository", "path", "ino", "size", "mtimeMs", "sha256"],
          additionalProperties: false,
        },
        response: { 200: { type: "object", properties: { outcome: { type: "string" } } }, ...errors },
      },
    },
    async (req) => {
      systemOnly(req);
      const b = req.body;
      const outcome = await deps.artifacts.index(addressOf(b.repository, b.path, deps.repositories()), { ino: b.ino, size: b.size, mtimeMs: b.mtimeMs }, b.sha256);
      if (outcome === "created" || outcome === "corrected") req.log.info({ repository: b.repository, path: b.path, outcome, principal: req.principal.id }, "artifact metadata indexed");
      return { outcome };
    },
  );

  app.post<{ Body: { repository: string; path: string } }>(
    "/internal/artifacts/forget",
    {
      schema: {
        body: { type: "object", properties: where, required: ["repository", "path"], additionalProperties: false },
        response: { 200: { type: "object", properties: { forgotten: { type: "boolean" } } }, ...errors },
      },
    },
    async (req) => {
      systemOnly(req);
      const b = req.body;
      const forgotten = await deps.artifacts.forget(addressOf(b.repository, b.path, deps.repositories()), actorOf(req.principal));
      if (forgotten) req.log.info({ repository: b.repository, path: b.path, principal: req.principal.id }, "dropped metadata of an artifact whose file is gone");
      return { forgotten };
    },
  );
}
