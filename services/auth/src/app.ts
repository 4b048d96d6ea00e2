import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { createBaseApp, type Check, type ServiceMetrics } from "@svc/kit";
import type { CredentialService } from "./domain/credential-service.js";
import type { PrincipalService } from "./domain/principal-service.js";
import { groupRoutes } from "./routes/group-routes.js";
import { principalRoutes } from "./routes/principal-routes.js";
import { credentialRoutes } from "./routes/credential-routes.js";
import { internalRoutes } from "./routes/internal-routes.js";

export interface AuthDeps {
  log: Logger;
  internalSecret: string;
  credentials: CredentialService;
  principals: PrincipalService;
  checks: Check[];
  metrics?: ServiceMetrics;
}


export function buildApp(deps: AuthDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, checks: deps.checks, metrics: deps.metrics });
  credentialRoutes(app, deps.credentials);
  principalRoutes(app, deps.principals);
  groupRoutes(app, deps.principals);
  internalRoutes(app, deps.credentials);
  return app;
}
