import type { FastifyInstance } from "fastify";
import type { ApiReport, Bus, ControlSubjects } from "@svc/kit";
import { mergeApiDocuments } from "../domain/openapi-merge.js";

export interface OpenApiDeps {
  bus: Pick<Bus, "gather">;
  control: Pick<ControlSubjects, "openapi">;
  /** This process's own description, answered locally so it is there with NATS down. */
  own: () => ApiReport;
  gatherMs?: number;
}

const problem = { $ref: "problem#" } as const;

/** The deployment's API description, merged from what every service says of its own routes. */
export function openapiRoutes(app: FastifyInstance, deps: OpenApiDeps): void {
  const gatherMs = deps.gatherMs ?? 400;
  app.get(
    "/api/openapi.json",
    {
      schema: {
        summary: "The OpenAPI document of every /api/ route of the deployment",
        response: { 200: { type: "object", additionalProperties: true }, 401: problem, 403: problem, 500: problem },
      },
    },
    async (_req, reply) => {
      const others = (await deps.bus.gather(deps.control.openapi, {}, gatherMs)) as ApiReport[];
      reply.header("cache-control", "no-store");
      return mergeApiDocuments([deps.own(), ...others]);
    },
  );
}
