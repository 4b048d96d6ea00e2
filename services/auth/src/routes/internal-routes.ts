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

  app.post<{ Body: { id: string; count: number; lastUsed: string; address: string }[] }>(
    "/internal/usage",
    {
      schema: {
        body: {
          type: "array",
          maxItems: 10_000,
          items: {
            type: "object",
            properties: { id: { type: "string" }, count: { type: "integer" }, lastUsed: { type: "string" }, address: { type: "string" } },
            required: ["id", "count", "lastUsed", "address"],
          },
        },
      },
    },
    async (req, reply) => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      await svc.recordUsage(req.body);
      return reply.code(204).send();
    },
  );
}
