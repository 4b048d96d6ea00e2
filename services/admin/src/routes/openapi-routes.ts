import type { FastifyInstance } from "fastify";
import type { ApiReport } from "@svc/kit";
import { mergeApiDocuments } from "../domain/openapi-merge.js";
import type { NodeControl } from "../messaging/node-control.js";

export interface OpenApiDeps {
  /** The other nodes' descriptions, over the control subjects. */
  peers: Pick<NodeControl, "gatherApiReports">;
  /** This process's own description, answered locally so it is there with NATS down. */
  own: () => ApiReport;
}

const problem = { $ref: "problem#" } as const;

/** The deployment's API description, merged from what every service says of its own routes. */
export function openapiRoutes(app: FastifyInstance, deps: OpenApiDeps): void {
  app.get(
    "/api/openapi.json",
    {
      schema: {
        summary: "The OpenAPI document of every /api/ route of the deployment",
        response: { 200: { type: "object", additionalProperties: true }, 401: problem, 403: problem, 500: problem },
      },
    },
    async (_req, reply) => {
      const others = await deps.peers.gatherApiReports();
      reply.header("cache-control", "no-store");
      return mergeApiDocuments([deps.own(), ...others]);
    },
  );
}
