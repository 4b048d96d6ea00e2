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


export function buildApp(deps: NotifierDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, checks: deps.checks, metrics: deps.metrics });
  webhookRoutes(app, deps.deliveries);
  return app;
}
