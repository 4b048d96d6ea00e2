import type { FastifyInstance } from "fastify";
import { createUpstreamApp, type UpstreamAppDeps } from "@svc/kit";
import type { DeliveryService } from "./domain/delivery-service.js";
import { webhookRoutes } from "./routes/webhook-routes.js";

export interface NotifierDeps extends UpstreamAppDeps {
  deliveries: DeliveryService;
}

export function buildApp(deps: NotifierDeps): FastifyInstance {
  const app = createUpstreamApp(deps);
  webhookRoutes(app, deps.deliveries);
  return app;
}
