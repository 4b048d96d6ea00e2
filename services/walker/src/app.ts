import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { createBaseApp, type Check, type ServiceMetrics } from "@svc/kit";
import type { WalkService } from "./domain/walk-service.js";
import { walkRoutes } from "./routes/walk-routes.js";

export interface WalkerDeps {
  log: Logger;
  internalSecret: string;
  walks: WalkService;
  checks: Check[];
  metrics?: ServiceMetrics;
}

export function buildApp(deps: WalkerDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, checks: deps.checks, metrics: deps.metrics });
  walkRoutes(app, deps.walks);
  return app;
}
