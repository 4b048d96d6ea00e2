import { Type } from "@sinclair/typebox";
import { grantAnswerSchema, grantBody, grantSchema } from "./grant-schemas.js";
import { scopeFromPath } from "./scope-param.js";
import type { PrincipalService } from "../domain/principal-service.js";
import { Answer, NoContent, Nullable, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";

const nameParam = Type.Object({ name: Type.String() });
const memberSchema = Answer({ id: Type.String() });
const memberId = Type.Object({ id: Type.String({ maxLength: 300 }) }, { additionalProperties: false });

/** `/api/groups`: a group name is one percent-encoded path segment. */
const groupSchema = Answer({ name: Type.String(), label: Nullable(Type.String()), grants: Type.Array(grantSchema), members: Type.Integer() });

export function groupRoutes(app: ServiceApp, svc: PrincipalService): void {
  app.get(
    "/api/groups",
    { schema: { querystring: pagingQuerySchema, response: { 200: Type.Array(groupSchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const page = await svc.listGroups(readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.get("/api/groups/:name", { schema: { params: nameParam, response: { 200: groupSchema, ...errorResponses(400, 404) } } }, async (req) => svc.group(req.params.name));

  app.get(
    "/api/groups/:name/members",
    { schema: { params: nameParam, querystring: pagingQuerySchema, response: { 200: Type.Array(memberSchema), ...errorResponses(400, 404) } } },
    async (req, reply) => {
      const page = await svc.members(req.params.name, readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items.map((id) => ({ id }));
    },
  );

  app.post(
    "/api/groups/:name/grants",
    { schema: { params: nameParam, body: grantBody, response: { 200: grantAnswerSchema, ...errorResponses(400, 413, 415) } } },
    async (req) => {
      const g = await svc.grantGroup(req.params.name, req.body);
      req.log.info({ group: req.params.name, scope: g.scope, tokens: g.tokens, principal: req.principal.id }, "group grant set");
      return g;
    },
  );

  app.delete(
    "/api/groups/:name/grants/*",
    { schema: { params: Type.Object({ name: Type.String(), "*": Type.String() }), response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      const scope = scopeFromPath(req.params["*"]);
      await svc.revokeGroupGrant(req.params.name, scope);
      req.log.info({ group: req.params.name, scope, principal: req.principal.id }, "group grant removed");
      return reply.code(204).send();
    },
  );

  app.post(
    "/api/groups/:name/members",
    { schema: { params: nameParam, body: memberId, response: { 200: memberSchema, 201: memberSchema, ...errorResponses(400, 413, 415) } } },
    async (req, reply) => {
      const added = await svc.addMember(req.params.name, req.body.id);
      req.log.info({ group: req.params.name, member: req.body.id, principal: req.principal.id }, added ? "group member added" : "group member already present");
      reply.code(added ? 201 : 200);
      return { id: req.body.id };
    },
  );

  app.delete(
    "/api/groups/:name/members",
    { schema: { params: nameParam, querystring: memberId, response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      await svc.removeMember(req.params.name, req.query.id);
      req.log.info({ group: req.params.name, member: req.query.id, principal: req.principal.id }, "group member removed");
      return reply.code(204).send();
    },
  );

  app.delete(
    "/api/groups/:name",
    { schema: { params: nameParam, response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      await svc.removeGroup(req.params.name);
      req.log.info({ group: req.params.name, principal: req.principal.id }, "group removed");
      return reply.code(204).send();
    },
  );
}
