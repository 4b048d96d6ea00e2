import type { FastifyInstance } from "fastify";
import { AUTH_INTERNAL, forbidden, keyUsageBatchSchema, notFound, type KeyResolution, type KeyUsageBatch } from "@svc/contracts";
import type { CredentialService } from "../domain/credential-service.js";

/** Routes only the gateway calls (signed as a system principal), never proxied from outside. */
export function internalRoutes(app: FastifyInstance, svc: CredentialService): void {
  app.get<{ Params: { id: string } }>(AUTH_INTERNAL.key, async (req): Promise<KeyResolution> => {
    if (req.principal.kind !== "system") throw forbidden("internal route");
    const r = await svc.resolve(req.params.id);
    if (!r) throw notFound("unknown key");
    return r;
  });

  app.post<{ Body: KeyUsageBatch }>(AUTH_INTERNAL.usage, { schema: { body: keyUsageBatchSchema } }, async (req, reply) => {
    if (req.principal.kind !== "system") throw forbidden("internal route");
    await svc.recordUsage(req.body);
    return reply.code(204).send();
  });
}
