import type { FastifyInstance } from "fastify";
import { forbidden, notFound } from "@svc/contracts";
import type { CredentialService } from "../domain/credential-service.js";

/** Routes only the gateway calls (signed as a system principal), never proxied from outside. */
export function internalRoutes(app: FastifyInstance, svc: CredentialService): void {
  app.get<{ Params: { id: string } }>("/internal/keys/:id", async (req) => {
    if (req.principal.kind !== "system") throw forbidden("internal route");
    const r = await svc.resolve(req.params.id);
    if (!r) throw notFound("unknown key");
    return r;
  });
}
