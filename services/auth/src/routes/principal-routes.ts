import { grantBodyProperties, grantSchema } from "./grant-schemas.js";
import type { FastifyInstance } from "fastify";
import type { PrincipalService } from "../domain/principal-service.js";
import { errorResponses as errors, pagingQuerySchema, readPaging } from "@svc/kit";

const idQuery = { type: "object", properties: { id: { type: "string", maxLength: 300 } }, required: ["id"], additionalProperties: false } as const;

/** `/api/principals`: people by provider-qualified id (`oauth/<id>`, `oidc/<sub>`), always in the query or body. */
export function principalRoutes(app: FastifyInstance, svc: PrincipalService): void {
  app.get<{ Querystring: { after?: string; limit?: string } }>(
    "/api/principals",
    {
      schema: {
        querystring: pagingQuerySchema,
        response: {
          200: { type: "array", items: { type: "object", properties: { id: { type: "string" }, label: { type: ["string", "null"] }, grants: { type: "array", items: grantSchema } } } },
          ...errors,
        },
      },
    },
    async (req, reply) => {
      const page = await svc.listPeople(readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.post<{ Body: { id: string; scope: string; tokens: string[]; expires?: string | null; label?: string } }>(
    "/api/principals/grants",
    {
      schema: {
        body: {
          type: "object",
          properties: { id: { type: "string", maxLength: 300 }, label: { type: "string", maxLength: 200 }, ...grantBodyProperties },
          required: ["id", "scope", "tokens"],
          additionalProperties: false,
        },
        response: { 200: grantSchema, ...errors },
      },
    },
    async (req) => {
      const g = await svc.grantPerson(req.body);
      req.log.info({ person: req.body.id, scope: g.scope, tokens: g.tokens, principal: req.principal.id }, "person grant set");
      return g;
    },
  );

  app.delete<{ Querystring: { id: string; scope: string } }>(
    "/api/principals/grants",
    {
      schema: {
        querystring: { type: "object", properties: { id: { type: "string", maxLength: 300 }, scope: { type: "string", maxLength: 1024 } }, required: ["id", "scope"], additionalProperties: false },
        response: { 204: { type: "null" }, ...errors },
      },
    },
    async (req, reply) => {
      await svc.revokePersonGrant(req.query.id, req.query.scope);
      req.log.info({ person: req.query.id, scope: req.query.scope, principal: req.principal.id }, "person grant removed");
      return reply.code(204).send();
    },
  );

  app.delete<{ Querystring: { id: string } }>(
    "/api/principals",
    { schema: { querystring: idQuery, response: { 204: { type: "null" }, ...errors } } },
    async (req, reply) => {
      await svc.removePerson(req.query.id);
      req.log.info({ person: req.query.id, principal: req.principal.id }, "person removed");
      return reply.code(204).send();
    },
  );

  app.get<{ Querystring: { id: string } }>(
    "/api/principals/rights",
    {
      schema: {
        querystring: idQuery,
        response: {
          200: {
            type: "object",
            properties: {
              id: { type: "string" },
              groups: { type: "array", items: { type: "string" } },
              grants: { type: "array", items: { type: "object", properties: { ...grantSchema.properties, via: { type: "string" } } } },
            },
          },
          ...errors,
        },
      },
    },
    async (req) => svc.effectiveRights(req.query.id),
  );
}
