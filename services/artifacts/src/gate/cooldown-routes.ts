import { Type } from "@sinclair/typebox";
import { LIMITS, invalid } from "@svc/contracts";
import { Answer, NoContent, Nullable, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";
import { actorOf } from "../domain/artifact-service.js";
import type { Allow } from "./cooldown-store.js";
import type { Cooldown } from "./cooldown.js";
import { UUID } from "./gate-store.js";

const allowSchema = Answer({
  id: Type.String(),
  repository: Nullable(Type.String({ description: "the repository it applies in; null: every repository" })),
  ecosystem: Type.String({ description: "npm, PyPI or Maven" }),
  name: Type.String({ description: "the package (PyPI: normalised; Maven: groupId:artifactId)" }),
  version: Nullable(Type.String({ description: "the one version let through; null: every version" })),
  reason: Type.String(),
  createdBy: Type.String({ description: "who added it (kind:id)" }),
  created: Type.String({ format: "date-time" }),
});
const allowBody = Type.Object(
  {
    repository: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.repositoryName, description: "only in this repository; absent: every repository" })),
    ecosystem: Type.String({ minLength: 1, maxLength: 20, description: "npm, PyPI or Maven" }),
    name: Type.String({ minLength: 1, maxLength: 512 }),
    version: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "only this version; absent: every version of the package" })),
    reason: Type.String({ minLength: 1, maxLength: 1000 }),
  },
  { additionalProperties: false },
);
export const repositoryGateSchema = Answer({
  minAge: Nullable(Type.String({ description: "the repository's own minimum age (a duration, or off); null: it inherits svc.gate.min-age" })),
});
const repositoryGateBody = Type.Object(
  { minAge: Type.Union([Type.Null(), Type.String({ maxLength: 64 })], { description: "a duration (72h, 3d, P3D); 0 or off: no cooldown in this repository; null: inherit svc.gate.min-age" }) },
  { additionalProperties: false },
);
const nameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
const idParam = Type.Object({ id: Type.String({ minLength: 1, maxLength: 4096 }) });
const allow = (a: Allow) => ({ ...a, created: a.created.toISOString() });

/**
 * The cooldown's administration (docs/administration/screening.md, "Cooldown"): break-glass
 * allows, and a repository's own minimum age. Under /api/, so the gateway asks manage:read to
 * read and manage:write to change.
 */
export function cooldownRoutes(app: ServiceApp, cooldown: Cooldown): void {
  app.get("/api/gate/allows", { schema: { summary: "The cooldown's break-glass allows", querystring: pagingQuerySchema, response: { 200: Type.Array(allowSchema), ...errorResponses(400) } } }, async (req, reply) => {
    const { after, limit } = readPaging(req.query);
    if (after !== undefined && !UUID.test(after)) throw invalid("after", "after must be the id of an allow (the X-Next-Cursor of the previous page)");
    const rows = await cooldown.allows(after, limit + 1);
    const page = rows.slice(0, limit);
    if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.id);
    return page.map(allow);
  });

  app.post(
    "/api/gate/allows",
    { schema: { summary: "Lets a package's young versions (or one version) through the cooldown", body: allowBody, response: { 201: allowSchema, ...errorResponses(400, 413, 415) } } },
    async (req, reply) => {
      const a = await cooldown.addAllow(req.body, actorOf(req.principal));
      req.log.info({ allow: a.id, repository: a.repository, ecosystem: a.ecosystem, name: a.name, version: a.version, principal: req.principal.id }, "cooldown allow added");
      return reply.code(201).header("location", `/api/gate/allows/${a.id}`).send(allow(a));
    },
  );

  app.delete("/api/gate/allows/:id", { schema: { params: idParam, response: { 204: NoContent, ...errorResponses(400, 404) } } }, async (req, reply) => {
    await cooldown.removeAllow(req.params.id);
    req.log.info({ allow: req.params.id, principal: req.principal.id }, "cooldown allow removed");
    return reply.code(204).send();
  });

  app.get("/api/repositories/:name/gate", { schema: { params: nameParam, response: { 200: repositoryGateSchema, ...errorResponses(400, 404) } } }, async (req) => cooldown.repositoryGate(req.params.name));

  app.put(
    "/api/repositories/:name/gate",
    { schema: { summary: "Sets a repository's own minimum age (the cooldown), or makes it inherit svc.gate.min-age", params: nameParam, body: repositoryGateBody, response: { 200: repositoryGateSchema, ...errorResponses(400, 404, 413, 415) } } },
    async (req) => {
      const out = await cooldown.setRepositoryGate(req.params.name, req.body.minAge);
      req.log.info({ repository: req.params.name, minAge: out.minAge, principal: req.principal.id }, "repository minimum age set");
      return out;
    },
  );
}
