import { Type } from "@sinclair/typebox";
import { Answer, Nullable, StringEnum, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";
import { actorOf } from "../domain/artifact-service.js";
import type { RepositoryExport } from "../domain/repository-export.js";
import { EXPORT_STATES, type ExportView, LIMITS } from "@svc/contracts";
import type { ExportRecord } from "../store/export-store.js";

const exportSchema = Answer({
  id: Type.String({ format: "uuid" }),
  source: Type.String(),
  target: Type.String(),
  format: Type.String(),
  state: StringEnum(EXPORT_STATES, { description: "running; done (the result is final); failed or interrupted (see detail; what was copied stays, and exporting again skips it)" }),
  actor: Type.String({ description: "who started it" }),
  total: Type.Integer({ description: "artifacts the source held when the export started" }),
  copied: Type.Integer(),
  skipped: Type.Integer({ description: "already in the target with the same content" }),
  refused: Type.Integer(),
  refusals: Type.Array(Type.Object({ path: Type.String(), reason: Type.String() }), { description: "the first 200 refusals, each with its reason" }),
  detail: Nullable(Type.String({ description: "why it failed or was interrupted" })),
  started: Type.String({ format: "date-time" }),
  ended: Nullable(Type.String({ format: "date-time" })),
});
const body = Type.Object({ target: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName, description: "the repository to copy into (same format)" }) }, { additionalProperties: false });
const sourceParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
const exportParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }), id: Type.String({ minLength: 1, maxLength: 64 }) });

/** The one mapping from a record to the contract's view (the record is that view with dates and a heartbeat). */
const view = (r: ExportRecord): ExportView => {
  const { heartbeat: _h, started, ended, ...rest } = r;
  return { ...rest, started: started.toISOString(), ended: ended?.toISOString() ?? null };
};
const location = (r: ExportRecord) => `/api/repositories/${encodeURIComponent(r.source)}/exports/${r.id}`;

/**
 * Exports through the admin API (the gateway asks manage:write on `*` to start one, manage:read
 * to read them): 202 with the record, then its progress and result at its Location.
 */
export function exportRoutes(app: ServiceApp, deps: { exports: RepositoryExport }): void {
  app.post(
    "/api/repositories/:name/export",
    { schema: { params: sourceParam, body, response: { 202: exportSchema, ...errorResponses(400, 403, 404, 409, 413, 415) } } },
    async (req, reply) => {
      const r = await deps.exports.start(req.params.name, req.body.target, actorOf(req.principal));
      req.log.info({ exportId: r.id, source: r.source, target: r.target, principal: req.principal.id }, "export started");
      return reply.code(202).header("location", location(r)).send(view(r));
    },
  );

  app.get(
    "/api/repositories/:name/exports/:id",
    { schema: { params: exportParams, response: { 200: exportSchema, ...errorResponses(400, 404) } } },
    async (req) => view(await deps.exports.show(req.params.name, req.params.id)),
  );

  app.get(
    "/api/repositories/:name/exports",
    { schema: { params: sourceParam, querystring: pagingQuerySchema, response: { 200: Type.Array(exportSchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      const rows = await deps.exports.list(req.params.name, limit + 1, after && /^[0-9a-f-]{36}$/i.test(after) ? after : undefined);
      const page = rows.slice(0, limit);
      if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.id);
      return page.map(view);
    },
  );
}
