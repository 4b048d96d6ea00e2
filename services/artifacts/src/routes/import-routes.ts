import { Type } from "@sinclair/typebox";
import { Answer, Nullable, StringEnum, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";
import { IMPORT_STATES, LIMITS, type ImportView } from "@svc/contracts";
import { actorOf } from "../domain/artifact-service.js";
import { MAX_IMPORT_PACKAGES, type ImportRecord, type ProxyImport } from "../domain/proxy-import.js";

const importSchema = Answer({
  id: Type.String({ format: "uuid" }),
  repository: Type.String({ description: "the proxy repository fetched into" }),
  format: Type.String(),
  target: Nullable(Type.String({ description: "the hosted repository it is exported into once fetched" })),
  state: StringEnum(IMPORT_STATES, { description: "running (resumed by another node, or this one restarted, when its node stops); done; failed (see detail)" }),
  actor: Type.String({ description: "who started it" }),
  packages: Type.Integer({ description: "packages listed" }),
  done: Type.Integer({ description: "packages done" }),
  imported: Type.Integer({ description: "files fetched and stored" }),
  skipped: Type.Integer({ description: "files the repository held already" }),
  held: Type.Integer({ description: "files fetched and held by the screening gate" }),
  refused: Type.Integer({ description: "files (or packages) not imported: refused by the gate, missing upstream, a digest mismatch, the upstream failing" }),
  refusals: Type.Array(Type.Object({ path: Type.String(), reason: Type.String() }), { description: "the first 200 refusals, each with its reason" }),
  export: Nullable(Type.String({ description: "the export into target, once started: GET /api/repositories/<repository>/exports/<id>" })),
  detail: Nullable(Type.String({ description: "why it failed" })),
  started: Type.String({ format: "date-time" }),
  ended: Nullable(Type.String({ format: "date-time" })),
});
const body = Type.Object(
  {
    packages: Type.Array(Type.String({ maxLength: 512 }), { minItems: 1, maxItems: MAX_IMPORT_PACKAGES, description: 'what to fetch: npm "name" or "name@version"; PyPI project names; Maven "groupId:artifactId" or "groupId:artifactId:version"; raw file paths' }),
    target: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.repositoryName, description: "a hosted repository of the same format to export into once everything is fetched" })),
  },
  { additionalProperties: false },
);
const repoParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
const importParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }), id: Type.String({ minLength: 1, maxLength: 64 }) });

/** The one mapping from a record to the contract's view. */
const view = ({ packages, exportId, started, ended, ...rest }: ImportRecord): ImportView => ({ ...rest, packages: packages.length, export: exportId, started: started.toISOString(), ended: ended?.toISOString() ?? null });
const location = (r: ImportRecord) => `/api/repositories/${encodeURIComponent(r.repository)}/imports/${r.id}`;

/** Imports through the admin API (docs/administration/repositories.md, "Imports"): 202 with the record, then its progress at its Location. */
export function importRoutes(app: ServiceApp, deps: { imports: ProxyImport }): void {
  app.post(
    "/api/repositories/:name/imports",
    { schema: { params: repoParam, body, response: { 202: importSchema, ...errorResponses(400, 403, 404, 409, 413, 415) } } },
    async (req, reply) => {
      const r = await deps.imports.start(req.params.name, req.body, actorOf(req.principal));
      req.log.info({ importId: r.id, repository: r.repository, packages: r.packages.length, target: r.target, principal: req.principal.id }, "import started");
      return reply.code(202).header("location", location(r)).send(view(r));
    },
  );

  app.get(
    "/api/repositories/:name/imports/:id",
    { schema: { params: importParams, response: { 200: importSchema, ...errorResponses(400, 404) } } },
    async (req) => view(await deps.imports.show(req.params.name, req.params.id)),
  );

  app.get(
    "/api/repositories/:name/imports",
    { schema: { params: repoParam, querystring: pagingQuerySchema, response: { 200: Type.Array(importSchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      const rows = await deps.imports.list(req.params.name, limit + 1, after && /^[0-9a-f-]{36}$/i.test(after) ? after : undefined);
      const page = rows.slice(0, limit);
      if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.id);
      return page.map(view);
    },
  );
}
