import type { FastifyRequest } from "fastify";
import { Type } from "@sinclair/typebox";
import {
  ARTIFACTS_INTERNAL,
  NEXT_CURSOR_HEADER,
  artifactsPageQuerySchema,
  artifactsPageSchema,
  forbidden,
  forgetRequestSchema,
  forgetResultSchema,
  indexRequestSchema,
  indexResultSchema,
  invalid,
  retentionRemoveRequestSchema,
  retentionRemoveResultSchema,
  type ArtifactMeta,
  type ForgetResult,
  type IndexResult,
  type RepositorySummary,
  type RetentionRemoveResult,
} from "@svc/contracts";
import { actorOf, type ArtifactService } from "../domain/artifact-service.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { addressOf } from "./address.js";
import { Answer, problemResponses, type ServiceApp } from "@svc/kit";

export interface InternalRoutesDeps {
  artifacts: ArtifactService;
  metadata: Pick<MetadataStore, "repositories" | "page">;
  repositories: () => ReadonlySet<string>;
}

/** What a walker's call may be refused with: no system identity (401, 403), no such repository (404), bad input (400). */
const errors = problemResponses(400, 401, 403, 404, 500);

const systemOnly = (req: FastifyRequest) => {
  if (req.principal.kind !== "system") throw forbidden("internal route");
};

/**
 * Routes only other services call (signed as a system principal), never proxied from outside:
 * what the walker needs to walk the store without touching this service's tables. Paths and
 * shapes are the contract in @svc/contracts the walker's client is typed from.
 */
export function internalRoutes(app: ServiceApp, deps: InternalRoutesDeps): void {
  app.get(
    ARTIFACTS_INTERNAL.repositories,
    // The retention policy as stored, passed on whole (never cut by a schema).
    { schema: { response: { 200: Type.Array(Answer({ name: Type.String(), format: Type.String(), retention: Type.Unknown() })), ...problemResponses(401, 403, 500) } } },
    async (req) => {
      systemOnly(req);
      // The retention column holds what parseRetentionPolicy accepted.
      return (await deps.metadata.repositories()) as RepositorySummary[];
    },
  );

  /** A repository's metadata in byte order of the path, the order a walk reads the tree in. */
  app.get(
    ARTIFACTS_INTERNAL.artifacts,
    { schema: { params: Type.Object({ name: Type.String() }), querystring: artifactsPageQuerySchema, response: { 200: artifactsPageSchema, ...errors } } },
    async (req, reply): Promise<ArtifactMeta[]> => {
      systemOnly(req);
      const limit = Math.min(Math.max(Number(req.query.limit ?? 1000), 1), 5000);
      const rows = await deps.metadata.page(req.params.name, req.query.after || undefined, limit);
      if (rows.length === limit) reply.header(NEXT_CURSOR_HEADER, rows[rows.length - 1]!.path);
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

  app.post(
    ARTIFACTS_INTERNAL.remove,
    { schema: { body: retentionRemoveRequestSchema, response: { 200: retentionRemoveResultSchema, ...errors } } },
    async (req): Promise<RetentionRemoveResult> => {
      systemOnly(req);
      const b = req.body;
      const updated = Date.parse(b.updated);
      if (Number.isNaN(updated)) throw invalid("updated", "updated must be an ISO-8601 instant");
      const out = await deps.artifacts.removeForRetention(addressOf(b.repository, b.path, deps.repositories()), { sha256: b.sha256, updated }, actorOf(req.principal));
      if (out.removed) req.log.info({ repository: b.repository, path: b.path, size: out.size, principal: req.principal.id }, "artifact removed by retention");
      return out;
    },
  );

  app.post(
    ARTIFACTS_INTERNAL.index,
    { schema: { body: indexRequestSchema, response: { 200: indexResultSchema, ...errors } } },
    async (req): Promise<IndexResult> => {
      systemOnly(req);
      const b = req.body;
      const outcome = await deps.artifacts.index(addressOf(b.repository, b.path, deps.repositories()), { ino: b.ino, size: b.size, mtimeMs: b.mtimeMs }, b.sha256);
      if (outcome === "created" || outcome === "corrected") req.log.info({ repository: b.repository, path: b.path, outcome, principal: req.principal.id }, "artifact metadata indexed");
      return { outcome };
    },
  );

  app.post(
    ARTIFACTS_INTERNAL.forget,
    { schema: { body: forgetRequestSchema, response: { 200: forgetResultSchema, ...errors } } },
    async (req): Promise<ForgetResult> => {
      systemOnly(req);
      const b = req.body;
      const forgotten = await deps.artifacts.forget(addressOf(b.repository, b.path, deps.repositories()), actorOf(req.principal));
      if (forgotten) req.log.info({ repository: b.repository, path: b.path, principal: req.principal.id }, "dropped metadata of an artifact whose file is gone");
      return { forgotten };
    },
  );
}
