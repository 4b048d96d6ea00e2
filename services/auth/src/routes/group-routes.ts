import { grantBody, grantSchema } from "./grant-schemas.js";
import { scopeFromPath } from "./scope-param.js";
import type { FastifyInstance } from "fastify";
import type { PrincipalService } from "../domain/principal-service.js";
import { errorResponses as errors, pagingQuerySchema, readPaging } from "@svc/kit";

const nameParam = { type: "object", properties: { name: { type: "string" } }, required: ["name"] } as const;

/** `/api/groups`: a group name is one percent-encoded path segment. */
export function groupRoutes(app: FastifyInstance, svc: PrincipalService): void {
  app.get<{ Querystring: { after?: string; limit?: string } }>(
    "/api/groups",
    {
      schema: {
        querystring: pagingQuerySchema,
        response: {
          200: {
            type: "array",
            items: { type: "object", properties: { name: { type: "string" }, label: { type: ["string", "null"] }, grants: { type: "array", items: grantSchema }, members: { type: "integer" } } },
          },
          ...errors,
        },
      },
    },
    async (req, reply) => {
      const page = await svc.listGroups(readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.get<{ Params: { name: string }; Querystring: { after?: string; limit?: string } }>(
    "/api/groups/:name/members",
    { schema: { params: nameParam, querystring: pagingQuerySchema, response: { 200: { type: "array", items: { type: "object", properties: { id: { type: "string" } } } }, ...errors } } },
    async (req, reply) => {
      const page = await svc.members(req.params.name, readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items.map((id) => ({ id }));
    },
  );

  app.post<{ Params: { name: string }; Body: { scope: string; tokens: string[]; expires?: string | null } }>(
    "/api/groups/:name/grants",
    {
      schema: {
        params: nameParam,
        body: grantBody,
        response: { 200: grantSchema, ...errors },
      },
    },
    async (req) => {
      const g = await svc.grantGroup(req.params.name, req.body);
      req.log.info({ group: req.params.name, scope: g.scope, tokens: g.tokens, principal: req.principal.id }, "group grant set");
      return g;
    },
  );

  app.delete<{ Params: { name: string; "*": string } }>(
    "/api/groups/:name/grants/*",
    { schema: { response: { 204: { type: "null" }, ...errors } } },
    async (req, reply) => {
      const scope = scopeFromPath(req.params["*"]);
      await svc.revokeGroupGrant(req.params.name, scope);
      req.log.info({ group: req.params.name, scope, principal: req.principal.id }, "group grant removed");
      return reply.code(204).send();
    },
  );

  app.post<{ Params: { name: string }; Body: { id: string } }>(
    "/api/groups/:name/members",
    {
      schema: {
        params: nameParam,
        body: { type: "object", properties: { id: { type: "string", maxLength: 300 } }, required: ["id"], additionalProperties: false },
        response: { 200: { type: "object", properties: { id: { type: "string" } } }, 201: { type: "object", properties: { id: { type: "string" } } }, ...errors },
      },
    },
    async (req, reply) => {
      const added = await svc.addMember(req.params.name, req.body.id);
      req.log.info({ group: req.params.name, member: req.body.id, principal: req.principal.id }, added ? "group member added" : "group member already present");
      reply.code(added ? 201 : 200);
      return { id: req.body.id };
    },
  );

  app.delete<{ Params: { name: string }; Querystring: { id: string } }>(
    "/api/groups/:name/members",
    {
      schema: {
        params: nameParam,
        querystring: { type: "object", properties: { id: { type: "string", maxLength: 300 } }, required: ["id"], additionalProperties: false },
        response: { 204: { type: "null" }, ...errors },
      },
    },
    async (req, reply) => {
      await svc.removeMember(req.params.name, req.query.id);
      req.log.info({ group: req.params.name, member: req.query.id, principal: req.principal.id }, "group member removed");
      return reply.code(204).send();
    },
  );

  app.delete<{ Params: { name: string } }>(
    "/api/groups/:name",
    { schema: { params: nameParam, response: { 204: { type: "null" }, ...errors } } },
    async (req, reply) => {
      await svc.removeGroup(req.params.name);
      req.log.info({ group: req.params.name, principal: req.principal.id }, "group removed");
      return reply.code(204).send();
    },
  );
}
