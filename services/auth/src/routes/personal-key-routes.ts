import { Type } from "@sinclair/typebox";
import { forbidden, type Principal } from "@svc/contracts";
import { Answer, NoContent, Nullable, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";
import type { PersonalKeyService } from "../domain/personal-key-service.js";
import { credentialSchema, mintedSchema } from "./credential-routes.js";

const grantChoice = Type.Object({ scope: Type.String({ maxLength: 1024 }), tokens: Type.Array(Type.String(), { maxItems: 32 }) }, { additionalProperties: false });

/** Only a signed-in person has personal keys: a key cannot mint keys for itself. */
function person(principal: Principal): string {
  if (principal.kind !== "person") throw forbidden("personal keys belong to a signed-in person: sign in to the console (or use npm login or svc login) to mint one");
  return principal.id;
}

/**
 * `/api/me/credentials`: the signed-in person's own keys (personal-key-service.ts). The gateway
 * admits any signed-in person (no manage right); another person's key is a 404 here.
 */
export function personalKeyRoutes(app: ServiceApp, svc: PersonalKeyService): void {
  app.get(
    "/api/me/credentials",
    { schema: { summary: "Your personal keys", querystring: pagingQuerySchema, response: { 200: Type.Array(credentialSchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const page = await svc.list(person(req.principal), readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      reply.header("cache-control", "no-store");
      return page.items;
    },
  );

  app.post(
    "/api/me/credentials",
    {
      schema: {
        summary: "Mint a personal key holding some of your rights, or all of them",
        body: Type.Object(
          {
            label: Type.Optional(Type.String({ maxLength: 200 })),
            expires: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
            all: Type.Optional(Type.Boolean({ description: "all your rights, now and as they change" })),
            grants: Type.Optional(Type.Array(grantChoice, { maxItems: 64 })),
          },
          { additionalProperties: false },
        ),
        response: { 201: Answer({ ...mintedSchema.properties, grants: Type.Array(Answer({ scope: Type.String(), tokens: Type.Array(Type.String()) })) }), ...errorResponses(400, 413, 415) },
      },
    },
    async (req, reply) => {
      const owner = person(req.principal);
      const b = req.body;
      const minted = await svc.mint(owner, { label: b.label, expires: b.expires ?? undefined, all: b.all, grants: b.grants });
      req.log.info({ credentialId: minted.id, owner, principal: req.principal.id }, "personal key minted");
      reply.code(201).header("cache-control", "no-store");
      return minted;
    },
  );

  app.delete(
    "/api/me/credentials/:id",
    { schema: { params: Type.Object({ id: Type.String({ pattern: "^[0-9a-f]{64}$" }) }), response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      await svc.revoke(person(req.principal), req.params.id);
      req.log.info({ credentialId: req.params.id, principal: req.principal.id }, "personal key revoked");
      return reply.code(204).send();
    },
  );
}
