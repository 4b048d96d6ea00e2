import { grantBody, grantSchema } from "./grant-schemas.js";
import { scopeFromPath } from "./scope-param.js";
import type { FastifyInstance } from "fastify";
import type { CredentialService } from "../domain/credential-service.js";
import { errorResponses as errors, pagingQuerySchema, readPaging } from "@svc/kit";

const idParam = {
  type: "object",
  properties: { id: { type: "string", pattern: "^[0-9a-f]{64}$" } },
  required: ["id"],
} as const;


const credentialSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    label: { type: ["string", "null"] },
    created: { type: "string" },
    expires: { type: ["string", "null"] },
    state: { type: "string" },
    revoked: { type: ["string", "null"] },
    allowedAddresses: { type: "array", items: { type: "string" } },
    grants: { type: "array", items: grantSchema },
    lastUsed: { type: ["string", "null"] },
    lastUsedFrom: { type: ["string", "null"] },
    useCount: { type: "integer" },
  },
} as const;

const mintedSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    key: { type: "string" },
    label: { type: ["string", "null"] },
    created: { type: "string" },
    expires: { type: ["string", "null"] },
    predecessor: { type: "object", properties: { id: { type: "string" }, expires: { type: ["string", "null"] } } },
  },
} as const;

/**
 * `/api/credentials`. A scope in the grant-removal path is one percent-encoded segment
 * (`libs%3Acom%2Facme`); the same scope written with literal slashes is read too.
 */
export function credentialRoutes(app: FastifyInstance, svc: CredentialService): void {
  app.get<{ Querystring: { after?: string; limit?: string } }>(
    "/api/credentials",
    { schema: { querystring: pagingQuerySchema, response: { 200: { type: "array", items: credentialSchema }, ...errors } } },
    async (req, reply) => {
      const page = await svc.list(readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.post<{ Body: { label?: string; expires?: string | null; nonExpiring?: boolean } }>(
    "/api/credentials",
    {
      schema: {
        body: {
          type: ["object", "null"],
          properties: { label: { type: "string", maxLength: 200 }, expires: { type: ["string", "null"], maxLength: 64 }, nonExpiring: { type: "boolean" } },
          additionalProperties: false,
        },
        response: { 201: mintedSchema, ...errors },
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

  app.get<{ Params: { id: string } }>(
    "/api/credentials/:id",
    { schema: { params: idParam, response: { 200: credentialSchema, ...errors } } },
    async (req) => svc.get(req.params.id),
  );

  app.post<{ Params: { id: string }; Body: { scope: string; tokens: string[]; expires?: string | null } }>(
    "/api/credentials/:id/grants",
    {
      schema: {
        params: idParam,
        body: grantBody,
        response: { 200: grantSchema, ...errors },
      },
    },
    async (req) => {
      const g = await svc.setGrant(req.params.id, { scope: req.body.scope, tokens: req.body.tokens, expires: req.body.expires ?? undefined });
      req.log.info({ credentialId: req.params.id, scope: g.scope, tokens: g.tokens, principal: req.principal.id }, "credential grant set");
      return g;
    },
  );

  app.delete<{ Params: { id: string; "*": string } }>(
    "/api/credentials/:id/grants/*",
    { schema: { response: { 204: { type: "null" }, ...errors } } },
    async (req, reply) => {
      const id = req.params.id;
      if (!/^[0-9a-f]{64}$/.test(id)) return reply.callNotFound();
      const scope = scopeFromPath(req.params["*"]);
      await svc.removeGrant(id, scope);
      req.log.info({ credentialId: id, scope, principal: req.principal.id }, "credential grant removed");
      return reply.code(204).send();
    },
  );

  app.put<{ Params: { id: string }; Body: { expires?: string | null } }>(
    "/api/credentials/:id/expiry",
    {
      schema: {
        params: idParam,
        body: { type: "object", properties: { expires: { type: ["string", "null"], maxLength: 64 } }, additionalProperties: false },
        response: { 200: credentialSchema, ...errors },
      },
    },
    async (req) => {
      const v = await svc.setExpiry(req.params.id, req.body.expires);
      req.log.info({ credentialId: req.params.id, expires: v.expires, principal: req.principal.id }, "credential expiry changed");
      return v;
    },
  );

  app.put<{ Params: { id: string }; Body: { addresses?: string | string[] | null } }>(
    "/api/credentials/:id/allowed-ips",
    {
      schema: {
        params: idParam,
        body: {
          type: "object",
          properties: { addresses: { anyOf: [{ type: "string", maxLength: 8192 }, { type: "array", items: { type: "string" }, maxItems: 256 }, { type: "null" }] } },
          additionalProperties: false,
        },
        response: { 200: credentialSchema, ...errors },
      },
    },
    async (req) => {
      const v = await svc.setAllowedAddresses(req.params.id, req.body.addresses);
      req.log.info({ credentialId: req.params.id, allowedAddresses: v.allowedAddresses, principal: req.principal.id }, "credential allowlist changed");
      return v;
    },
  );

  app.post<{ Params: { id: string }; Body: { overlap?: string | null } | null }>(
    "/api/credentials/:id/rotate",
    {
      schema: {
        params: idParam,
        body: { type: ["object", "null"], properties: { overlap: { type: ["string", "null"], maxLength: 64 } }, additionalProperties: false },
        response: { 201: mintedSchema, ...errors },
      },
    },
    async (req, reply) => {
      const r = await svc.rotate(req.params.id, req.body?.overlap);
      req.log.info({ credentialId: req.params.id, successor: r.id, principal: req.principal.id }, "credential rotated");
      reply.code(201).header("cache-control", "no-store");
      return r;
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/api/credentials/:id",
    { schema: { params: idParam, response: { 204: { type: "null" }, ...errors } } },
    async (req, reply) => {
      await svc.revoke(req.params.id);
      req.log.info({ credentialId: req.params.id, principal: req.principal.id }, "credential revoked");
      return reply.code(204).send();
    },
  );
}
