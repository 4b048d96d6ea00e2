import { Type } from "@sinclair/typebox";
import { grantAnswerSchema, grantBody, grantSchema } from "./grant-schemas.js";
import { scopeFromPath } from "./scope-param.js";
import type { CredentialService } from "../domain/credential-service.js";
import { Answer, NoContent, Nullable, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";

const idParam = Type.Object({ id: Type.String({ pattern: "^[0-9a-f]{64}$" }) });
/** Checked by the handler, not the schema: a malformed id here is a 404 (no such route), as before. */
const grantPathParams = Type.Object({ id: Type.String(), "*": Type.String() });

export const credentialSchema = Answer({
  id: Type.String(),
  label: Nullable(Type.String()),
  created: Type.String(),
  expires: Nullable(Type.String()),
  state: Type.String(),
  expiringSoon: Type.Boolean({ description: "active and expiring within 14 days" }),
  revoked: Nullable(Type.String()),
  allowedAddresses: Type.Array(Type.String()),
  grants: Type.Array(grantSchema),
  bootstrap: Type.Boolean({ description: "the key svc.bootstrap-key provisions" }),
  owner: Nullable(Type.String({ description: "a personal key's person (it holds at most what they hold); null for a key an administrator issued" })),
  lastUsed: Nullable(Type.String()),
  lastUsedFrom: Nullable(Type.String()),
  useCount: Type.Integer(),
});

const listQuery = Type.Object(
  {
    ...pagingQuerySchema.properties,
    expiring: Type.Optional(Type.String({ maxLength: 64, description: "ISO-8601 duration: only active keys expiring within it from now (e.g. P14D)" })),
    owner: Type.Optional(Type.String({ maxLength: 300, description: "only the personal keys of this person" })),
  },
  { additionalProperties: false },
);

export const mintedSchema = Answer({
  id: Type.String(),
  key: Type.String(),
  label: Nullable(Type.String()),
  created: Type.String(),
  expires: Nullable(Type.String()),
  predecessor: Answer({ id: Type.String(), expires: Nullable(Type.String()) }),
});

/**
 * `/api/credentials`. A scope in the grant-removal path is one percent-encoded segment
 * (`libs%3Acom%2Facme`); the same scope written with literal slashes is read too.
 */
export function credentialRoutes(app: ServiceApp, svc: CredentialService): void {
  app.get(
    "/api/credentials",
    { schema: { querystring: listQuery, response: { 200: Type.Array(credentialSchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const page = await svc.list({ ...readPaging(req.query), expiring: req.query.expiring, owner: req.query.owner });
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.post(
    "/api/credentials",
    {
      schema: {
        body: Nullable(
          Type.Object(
            { label: Type.Optional(Type.String({ maxLength: 200 })), expires: Type.Optional(Nullable(Type.String({ maxLength: 64 }))), nonExpiring: Type.Optional(Type.Boolean()) },
            { additionalProperties: false },
          ),
        ),
        response: { 201: mintedSchema, ...errorResponses(400, 413, 415) },
      },
    },
    async (req, reply) => {
      const body = req.body ?? {};
      const minted = await svc.mint({ label: body.label, expires: body.expires ?? undefined, nonExpiring: body.nonExpiring });
      req.log.info({ credentialId: minted.id, principal: req.principal.id }, "credential minted");
      reply.code(201).header("cache-control", "no-store");
      return minted;
    },
  );

  app.get(
    "/api/credentials/:id",
    { schema: { params: idParam, response: { 200: credentialSchema, ...errorResponses(400, 404) } } },
    async (req) => svc.get(req.params.id),
  );

  app.post(
    "/api/credentials/:id/grants",
    { schema: { params: idParam, body: grantBody, response: { 200: grantAnswerSchema, ...errorResponses(400, 404, 409, 413, 415) } } },
    async (req) => {
      const g = await svc.setGrant(req.params.id, { scope: req.body.scope, tokens: req.body.tokens, expires: req.body.expires ?? undefined });
      req.log.info({ credentialId: req.params.id, scope: g.scope, tokens: g.tokens, principal: req.principal.id }, "credential grant set");
      return g;
    },
  );

  app.delete(
    "/api/credentials/:id/grants/*",
    { schema: { params: grantPathParams, response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      const id = req.params.id;
      if (!/^[0-9a-f]{64}$/.test(id)) return reply.callNotFound();
      const scope = scopeFromPath(req.params["*"]);
      await svc.removeGrant(id, scope);
      req.log.info({ credentialId: id, scope, principal: req.principal.id }, "credential grant removed");
      return reply.code(204).send();
    },
  );

  app.put(
    "/api/credentials/:id/expiry",
    {
      schema: {
        params: idParam,
        // Required: clearing takes an explicit blank or null, so `{}` (a client that lost the field) changes nothing.
        body: Type.Object({ expires: Nullable(Type.String({ maxLength: 64 })) }, { additionalProperties: false }),
        response: { 200: credentialSchema, ...errorResponses(400, 404, 409, 413, 415) },
      },
    },
    async (req) => {
      const v = await svc.setExpiry(req.params.id, req.body.expires);
      req.log.info({ credentialId: req.params.id, expires: v.expires, principal: req.principal.id }, "credential expiry changed");
      return v;
    },
  );

  app.put(
    "/api/credentials/:id/allowed-ips",
    {
      schema: {
        params: idParam,
        body: Type.Object(
          { addresses: Type.Union([Type.String({ maxLength: 8192 }), Type.Array(Type.String(), { maxItems: 256 }), Type.Null()]) },
          { additionalProperties: false },
        ),
        response: { 200: credentialSchema, ...errorResponses(400, 404, 409, 413, 415) },
      },
    },
    async (req) => {
      const v = await svc.setAllowedAddresses(req.params.id, req.body.addresses);
      req.log.info({ credentialId: req.params.id, allowedAddresses: v.allowedAddresses, principal: req.principal.id }, "credential allowlist changed");
      return v;
    },
  );

  app.post(
    "/api/credentials/:id/rotate",
    {
      schema: {
        params: idParam,
        body: Nullable(Type.Object({ overlap: Type.Optional(Nullable(Type.String({ maxLength: 64 }))) }, { additionalProperties: false })),
        response: { 201: mintedSchema, ...errorResponses(400, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => {
      const r = await svc.rotate(req.params.id, req.body?.overlap);
      req.log.info({ credentialId: req.params.id, successor: r.id, principal: req.principal.id }, "credential rotated");
      reply.code(201).header("cache-control", "no-store");
      return r;
    },
  );

  app.delete(
    "/api/credentials/:id",
    { schema: { params: idParam, response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      await svc.revoke(req.params.id);
      req.log.info({ credentialId: req.params.id, principal: req.principal.id }, "credential revoked");
      return reply.code(204).send();
    },
  );
}
