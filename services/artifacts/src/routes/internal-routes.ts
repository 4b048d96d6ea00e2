import type { FastifyRequest } from "fastify";
import { Type } from "@sinclair/typebox";
import { forbidden, invalid } from "@svc/contracts";
import { actorOf, type ArtifactService } from "../domain/artifact-service.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { addressOf } from "./address.js";
import { Answer, Nullable, StringEnum, problemResponses, type ServiceApp } from "@svc/kit";

export interface InternalRoutesDeps {
  artifacts: ArtifactService;
  metadata: Pick<MetadataStore, "repositories" | "page">;
  repositories: () => ReadonlySet<string>;
}

const systemOnly = (req: FastifyRequest) => {
  if (req.principal.kind !== "system") throw forbidden("internal route");
};

const where = { repository: Type.String({ minLength: 1, maxLength: 200 }), path: Type.String({ minLength: 1, maxLength: 1024 }) };
const hex64 = Type.String({ pattern: "^[0-9a-f]{64}$" });
/** What a walker's call may be refused with: no system identity (401, 403), no such repository (404), bad input (400). */
const errors = problemResponses(400, 401, 403, 404, 500);

/**
 * Routes only other services call (signed as a system principal), never proxied from outside:
 * what the walker needs to walk the store without touching this service's tables.
 */
export function internalRoutes(app: ServiceApp, deps: InternalRoutesDeps): void {
  app.get(
    "/internal/repositories",
    // The retention policy as stored, passed on whole (never cut by a schema).
    { schema: { response: { 200: Type.Array(Answer({ name: Type.String(), format: Type.String(), retention: Type.Unknown() })), ...problemResponses(401, 403, 500) } } },
    async (req) => {
      systemOnly(req);
      return deps.metadata.repositories();
    },
  );

  /** A repository's metadata in byte order of the path, the order a walk reads the tree in. */
  app.get(
    "/internal/repositories/:name/artifacts",
    {
      schema: {
        params: Type.Object({ name: Type.String() }),
        querystring: Type.Object(
          { after: Type.Optional(Type.String({ maxLength: 1024 })), limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,5}$" })) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Array(
            Answer({
              path: Type.String(),
              size: Type.Integer(),
              sha256: Type.String(),
              updated: Type.String(),
              lastDownloaded: Nullable(Type.String()),
              downloads: Type.Integer(),
              held: Type.Boolean(),
            }),
          ),
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

  app.post(
    "/internal/artifacts/remove",
    {
      schema: {
        body: Type.Object({ ...where, reason: StringEnum(["retention"]), sha256: hex64, updated: Type.String({ maxLength: 40 }) }, { additionalProperties: false }),
        response: { 200: Answer({ removed: Type.Boolean(), size: Type.Integer(), why: Type.String() }), ...errors },
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

  app.post(
    "/internal/artifacts/index",
    {
      schema: {
        body: Type.Object(
          { ...where, ino: Type.Integer({ minimum: 0 }), size: Type.Integer({ minimum: 0 }), mtimeMs: Type.Integer(), sha256: hex64 },
          { additionalProperties: false },
        ),
        response: { 200: Answer({ outcome: Type.String() }), ...errors },
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

  app.post(
    "/internal/artifacts/forget",
    {
      schema: {
        body: Type.Object(where, { additionalProperties: false }),
        response: { 200: Answer({ forgotten: Type.Boolean() }), ...errors },
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
