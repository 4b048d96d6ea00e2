import { Type } from "@sinclair/typebox";
import { AUTH_INTERNAL, PersonResolution, forbidden, keyResolutionSchema, keyUsageBatchSchema, notFound, type KeyResolution } from "@svc/contracts";
import type { CredentialService } from "../domain/credential-service.js";
import type { IdentityService } from "../domain/identity-service.js";
import { NoContent, problemResponses, type ServiceApp } from "@svc/kit";

/** Routes only the gateway calls (signed as a system principal), never proxied from outside. */
export function internalRoutes(app: ServiceApp, svc: CredentialService, identity: Pick<IdentityService, "resolvePerson">): void {
  app.get(
    AUTH_INTERNAL.key,
    { schema: { params: Type.Object({ id: Type.String() }), response: { 200: keyResolutionSchema, ...problemResponses(401, 403, 404, 500) } } },
    async (req): Promise<KeyResolution> => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      const r = await svc.resolve(req.params.id);
      if (!r) throw notFound("unknown key");
      return r;
    },
  );

  // A signed-in person's rights (the gateway's rights cache, beside keys): 200 even for a person nobody granted anything.
  app.get(
    AUTH_INTERNAL.person,
    { schema: { params: Type.Object({ id: Type.String({ maxLength: 300 }) }), response: { 200: PersonResolution, ...problemResponses(400, 401, 403, 500) } } },
    async (req): Promise<PersonResolution> => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      return identity.resolvePerson(req.params.id);
    },
  );

  app.post(
    AUTH_INTERNAL.usage,
    {
      schema: {
        body: keyUsageBatchSchema,
        response: { 204: NoContent, ...problemResponses(400, 401, 403, 413, 415, 500) },
      },
    },
    async (req, reply) => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      await svc.recordUsage(req.body);
      return reply.code(204).send();
    },
  );
}
