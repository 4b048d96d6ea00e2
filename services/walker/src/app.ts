import type { FastifyInstance } from "fastify";
import { createUpstreamApp, type UpstreamAppDeps } from "@svc/kit";
import type { WalkService } from "./domain/walk-service.js";
import { walkRoutes } from "./routes/walk-routes.js";

export interface WalkerDeps extends UpstreamAppDeps {
  walks: WalkService;
}

export function buildApp(deps: WalkerDeps): FastifyInstance {
  const app = createUpstreamApp(deps);
  walkRoutes(app, deps.walks);
  return app;
}
