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
  backfillRequestSchema,
  collectRequestSchema,
  collectResultSchema,
  type CollectResult,
  backfillResultSchema,
  invalid,
  notFound,
  reclaimBlobsRequestSchema,
  reclaimBlobsResultSchema,
  verifyBlobRequestSchema,
  verifyBlobResultSchema,
  retentionRemoveRequestSchema,
  retentionRemoveResultSchema,
  type ArtifactMeta,
  type BackfillResult,
  type ForgetResult,
  type ReclaimBlobsResult,
  type VerifyBlobResult,
  type RepositorySummary,
  type RetentionRemoveResult,
  type ScopeFromPathDoc,
} from "@svc/contracts";
import { actorOf, type ArtifactService } from "../domain/artifact-service.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { addressOf } from "./address.js";
import type { Format } from "../formats/format.js";
import { Answer, problemResponses, type ServiceApp } from "@svc/kit";
import type { LiveFile } from "../proxy/file-fetch.js";
import { PROXY_FETCH_ROUTE } from "../proxy/fetch-relay.js";

export interface InternalRoutesDeps {
  artifacts: ArtifactService;
  metadata: Pick<MetadataStore, "repositories" | "page" | "scopeFromPathNames">;
  repositories: () => ReadonlySet<string>;
  /** Each repository's format (its `collect` step). */
  formats?: { of(repository: string): Pick<Format, "collect"> | undefined };
  /** A proxy fetch of this node's that another node streams (proxy/fetch-relay.ts): its bytes as they arrive; undefined once it is over. */
  proxyFetch?: (id: string) => LiveFile | undefined;
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

  /** For every gateway (domain/repository-scopes.ts there): the repositories authorised by the repository their path names. */
  app.get(
    ARTIFACTS_INTERNAL.scopeFromPath,
    { schema: { response: { 200: Answer({ repositories: Type.Array(Type.String()) }), ...problemResponses(401, 403, 500) } } },
    async (req): Promise<ScopeFromPathDoc> => {
      systemOnly(req);
      return { repositories: await deps.metadata.scopeFromPathNames() };
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

  /**
   * Another artifacts node's request for the bytes of a file this node is fetching for a proxy
   * repository, as they arrive (proxy/fetch-relay.ts): broken off, as this node's own answers
   * are, when the fetch fails; 404 once it is over (the asker then serves the stored file).
   */
  app.get(PROXY_FETCH_ROUTE, { schema: { params: Type.Object({ id: Type.String({ maxLength: 64 }) }) } }, async (req, reply) => {
    systemOnly(req);
    const live = deps.proxyFetch?.(req.params.id);
    if (!live) throw notFound("no such proxy fetch under way on this node");
    reply.code(200).header("content-type", "application/octet-stream");
    if (live.size !== undefined) reply.header("content-length", String(live.size));
    return reply.send(live.body);
  });

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
    ARTIFACTS_INTERNAL.forget,
    { schema: { body: forgetRequestSchema, response: { 200: forgetResultSchema, ...errors } } },
    async (req): Promise<ForgetResult> => {
      systemOnly(req);
      const b = req.body;
      const forgotten = await deps.artifacts.forget(addressOf(b.repository, b.path, deps.repositories()), actorOf(req.principal));
      if (forgotten) req.log.info({ repository: b.repository, path: b.path, principal: req.principal.id }, "dropped the index row of an artifact whose blob is gone");
      return { forgotten };
    },
  );

  app.post(
    ARTIFACTS_INTERNAL.reclaimBlobs,
    { schema: { body: reclaimBlobsRequestSchema, response: { 200: reclaimBlobsResultSchema, ...errors } } },
    async (req): Promise<ReclaimBlobsResult> => {
      systemOnly(req);
      const removed = await deps.artifacts.reclaim(req.body.digests, req.body.olderThanMs);
      if (removed.length) req.log.info({ blobs: removed.length, bytes: removed.reduce((n, r) => n + r.size, 0), principal: req.principal.id }, "reclaimed blobs nothing references");
      return { removed };
    },
  );

  app.post(
    ARTIFACTS_INTERNAL.verifyBlob,
    { schema: { body: verifyBlobRequestSchema, response: { 200: verifyBlobResultSchema, ...errors } } },
    async (req): Promise<VerifyBlobResult> => {
      systemOnly(req);
      const known = deps.repositories();
      const out = await deps.artifacts.verifyBlob(req.body.sha256, actorOf(req.principal), (repository, path) => {
        try {
          return addressOf(repository, path, known);
        } catch {
          return undefined; // a repository being removed, or a path no URL can name: left to the removal
        }
      });
      if (out.outcome === "corrupt") req.log.warn({ sha256: req.body.sha256, forgotten: out.forgottenCount, principal: req.principal.id }, "removed a corrupt blob and forgot the paths that held it");
      return out;
    },
  );

  app.post(
    ARTIFACTS_INTERNAL.backfill,
    { schema: { params: Type.Object({ name: Type.String() }), body: backfillRequestSchema, response: { 200: backfillResultSchema, ...errors } } },
    async (req): Promise<BackfillResult> => {
      systemOnly(req);
      const known = deps.repositories();
      const addresses = req.body.paths.map((p) => addressOf(req.params.name, p, known));
      const filled = await deps.artifacts.backfill(req.params.name, addresses);
      if (filled) req.log.info({ repository: req.params.name, filled, principal: req.principal.id }, "format index rows backfilled");
      return { filled };
    },
  );

  app.post(
    ARTIFACTS_INTERNAL.collect,
    { schema: { params: Type.Object({ name: Type.String() }), body: collectRequestSchema, response: { 200: collectResultSchema, ...errors } } },
    async (req): Promise<CollectResult> => {
      systemOnly(req);
      if (!deps.repositories().has(req.params.name)) throw notFound(`no repository named ${req.params.name}`);
      const collect = deps.formats?.of(req.params.name)?.collect;
      const counts = collect ? await collect(req.params.name, req.body.step, { graceMs: req.body.graceMs }) : {};
      if (Object.values(counts).some((n) => n > 0)) req.log.info({ repository: req.params.name, step: req.body.step, counts, principal: req.principal.id }, "format collection");
      return { counts };
    },
  );
}
