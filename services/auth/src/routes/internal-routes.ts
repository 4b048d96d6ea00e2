import { Type } from "@sinclair/typebox";
import { forbidden, notFound } from "@svc/contracts";
import type { CredentialService } from "../domain/credential-service.js";
import { Answer, NoContent, Nullable, problemResponses, type ServiceApp } from "@svc/kit";
import { grantSchema } from "./grant-schemas.js";

/** What the gateway needs to admit a key (answered whole: it was never cut by a schema). */
const resolutionSchema = Answer({
  id: Type.String(),
  tenant: Type.String(),
  state: Type.String(),
  expires: Nullable(Type.String()),
  allowedAddresses: Type.Array(Type.String()),
  grants: Type.Array(grantSchema),
});

/** Routes only the gateway calls (signed as a system principal), never proxied from outside. */
export function internalRoutes(app: ServiceApp, svc: CredentialService): void {
  app.get(
    "/internal/keys/:id",
    { schema: { params: Type.Object({ id: Type.String() }), response: { 200: resolutionSchema, ...problemResponses(401, 403, 404, 500) } } },
    async (req) => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      const r = await svc.resolve(req.params.id);
      if (!r) throw notFound("unknown key");
      return r;
    },
  );

  app.post(
    "/internal/usage",
    {
      schema: {
        body: Type.Array(Type.Object({ id: Type.String(), count: Type.Integer(), lastUsed: Type.String(), address: Type.String() }), { maxItems: 10_000 }),
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
