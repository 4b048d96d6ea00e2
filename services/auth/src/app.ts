import type { FastifyInstance } from "fastify";
import { createUpstreamApp, type UpstreamAppDeps } from "@svc/kit";
import type { CredentialService } from "./domain/credential-service.js";
import type { IdentityService } from "./domain/identity-service.js";
import type { PrincipalService } from "./domain/principal-service.js";
import { groupRoutes } from "./routes/group-routes.js";
import { principalRoutes } from "./routes/principal-routes.js";
import { credentialRoutes } from "./routes/credential-routes.js";
import { internalRoutes } from "./routes/internal-routes.js";
import { meRoutes } from "./routes/me-routes.js";

export interface AuthDeps extends UpstreamAppDeps {
  credentials: CredentialService;
  principals: PrincipalService;
  identity: IdentityService;
}

export function buildApp(deps: AuthDeps): FastifyInstance {
  const app = createUpstreamApp(deps);
  credentialRoutes(app, deps.credentials);
  principalRoutes(app, deps.principals);
  groupRoutes(app, deps.principals);
  meRoutes(app, deps.identity);
  internalRoutes(app, deps.credentials, deps.identity);
  return app;
}
