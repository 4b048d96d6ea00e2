import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { createBaseApp } from "@svc/kit";
import { capabilityRoutes, type Capabilities } from "./routes/capability-routes.js";

export interface AdminDeps {
  log: Logger;
  internalSecret: string;
  capabilities: Capabilities;
}

export function buildApp(deps: AdminDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret });
  capabilityRoutes(app, deps.capabilities);
  return app;
}
