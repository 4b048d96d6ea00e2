import { Type } from "@sinclair/typebox";
import { grantAnswerSchema, grantBodyProperties, grantProperties, grantSchema } from "./grant-schemas.js";
import type { PrincipalService } from "../domain/principal-service.js";
import { Answer, NoContent, Nullable, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";

const personId = Type.String({ maxLength: 300 });
const idQuery = Type.Object({ id: personId }, { additionalProperties: false });

/** `/api/principals`: people by provider-qualified id (`oauth/<id>`, `oidc/<sub>`), always in the query or body. */
export function principalRoutes(app: ServiceApp, svc: PrincipalService): void {
  app.get(
    "/api/principals",
    {
      schema: {
        querystring: pagingQuerySchema,
        response: { 200: Type.Array(Answer({ id: Type.String(), label: Nullable(Type.String()), grants: Type.Array(grantSchema) })), ...errorResponses(400) },
      },
    },
    async (req, reply) => {
      const page = await svc.listPeople(readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.post(
    "/api/principals/grants",
    {
      schema: {
        body: Type.Object({ id: personId, label: Type.Optional(Type.String({ maxLength: 200 })), ...grantBodyProperties }, { additionalProperties: false }),
        response: { 200: grantAnswerSchema, ...errorResponses(400, 413, 415) },
      },
    },
    async (req) => {
      const g = await svc.grantPerson(req.body);
      req.log.info({ person: req.body.id, scope: g.scope, tokens: g.tokens, principal: req.principal.id }, "person grant set");
      return g;
    },
  );

  app.delete(
    "/api/principals/grants",
    {
      schema: {
        querystring: Type.Object({ id: personId, scope: Type.String({ maxLength: 1024 }) }, { additionalProperties: false }),
        response: { 204: NoContent, ...errorResponses(400, 404) },
      },
    },
    async (req, reply) => {
      await svc.revokePersonGrant(req.query.id, req.query.scope);
      req.log.info({ person: req.query.id, scope: req.query.scope, principal: req.principal.id }, "person grant removed");
      return reply.code(204).send();
    },
  );

  app.delete(
    "/api/principals",
    { schema: { querystring: idQuery, response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      await svc.removePerson(req.query.id);
      req.log.info({ person: req.query.id, principal: req.principal.id }, "person removed");
      return reply.code(204).send();
    },
  );

  app.get(
    "/api/principals/rights",
    {
      schema: {
        querystring: idQuery,
        response: {
          200: Answer({ id: Type.String(), groups: Type.Array(Type.String()), grants: Type.Array(Answer({ ...grantProperties, via: Type.String() })) }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (req) => svc.effectiveRights(req.query.id),
  );
}
