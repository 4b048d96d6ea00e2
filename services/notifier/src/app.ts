import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { createBaseApp, type Check, type ServiceMetrics } from "@svc/kit";
import type { DeliveryService } from "./domain/delivery-service.js";
import { webhookRoutes } from "./routes/webhook-routes.js";

export interface NotifierDeps {
  log: Logger;
  internalSecret: string;
  deliveries: DeliveryService;
  checks: Check[];
  metrics?: ServiceMetrics;
}

const problemSchema = {
  $id: "problem",
  type: "object",
  properties: {
    type: { type: "string" },
    title: { type: "string" },
    status: { type: "integer" },
    code: { type: "string" },
    detail: { type: "string" },
    field: { type: "string" },
    reference: { type: "string" },
  },
};

export function buildApp(deps: NotifierDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, checks: deps.checks, metrics: deps.metrics });
  app.addSchema(problemSchema);
  webhookRoutes(app, deps.deliveries);
  return app;
}
