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
import type { PersonalKeyService } from "./domain/personal-key-service.js";
import { personalKeyRoutes } from "./routes/personal-key-routes.js";
import type { LoginFlowService } from "./domain/login-flow-service.js";
import { loginRoutes } from "./routes/login-routes.js";

export interface AuthDeps extends UpstreamAppDeps {
  credentials: CredentialService;
  principals: PrincipalService;
  identity: IdentityService;
  personalKeys: PersonalKeyService;
  logins: LoginFlowService;
}

export function buildApp(deps: AuthDeps): FastifyInstance {
  const app = createUpstreamApp(deps);
  credentialRoutes(app, deps.credentials);
  principalRoutes(app, deps.principals);
  groupRoutes(app, deps.principals);
  meRoutes(app, deps.identity);
  personalKeyRoutes(app, deps.personalKeys);
  loginRoutes(app, deps.logins);
  internalRoutes(app, deps.credentials, deps.identity);
  return app;
}
