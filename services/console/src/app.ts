import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import cookie from "@fastify/cookie";
import formbody from "@fastify/formbody";
import { createUpstreamApp, type UpstreamAppDeps } from "@svc/kit";
import type { SessionService } from "./domain/session-service.js";
import type { IdentityProvider } from "./domain/identity-providers.js";
import type { GatewayApi } from "./domain/gateway-api.js";
import type { ConsolePage } from "./pages/page-contract.js";
import { PAGES, UNLISTED_PAGES } from "./pages/index.js";
import type { SessionStore } from "./store/session-store.js";
import { consoleErrorHandler, SECURITY_HEADERS } from "./routes/console-http.js";
import { internalRoutes } from "./routes/internal-routes.js";
import { loginRoutes } from "./routes/login-routes.js";
import { uiRoutes } from "./routes/ui-routes.js";
import { assetRoutes } from "./routes/asset-routes.js";

const here = dirname(fileURLToPath(import.meta.url));

export interface ConsoleDeps extends UpstreamAppDeps {
  sessions: SessionService;
  signIns: Pick<SessionStore, "addSignIn" | "takeSignIn">;
  providers: IdentityProvider[];
  gateway: GatewayApi;
  options: {
    devProfile: boolean;
    secureCookie: boolean;
    publicUrl: string;
    gatewayUrl: string;
    /** svc.ui.deploy as it stands now (it changes at run time). */
    deployEnabled: () => boolean;
  };
  /** Default: every page of pages/index.ts. */
  pages?: readonly ConsolePage[];
}

export function buildApp(deps: ConsoleDeps): FastifyInstance {
  const app = createUpstreamApp(deps);
  app.register(cookie);
  app.register(formbody, { bodyLimit: 256 * 1024 });
  app.decorateRequest("consolePage", null);
  internalRoutes(app, deps.sessions);
  app.register(async (scope) => {
    scope.setErrorHandler(consoleErrorHandler);
    scope.addHook("onSend", async (_req, reply, payload) => {
      reply.headers(SECURITY_HEADERS);
      return payload;
    });
    const o = deps.options;
    loginRoutes(scope, { sessions: deps.sessions, signIns: deps.signIns, providers: deps.providers, devProfile: o.devProfile, secureCookie: o.secureCookie, publicUrl: o.publicUrl, gatewayUrl: o.gatewayUrl });
    uiRoutes(scope, { sessions: deps.sessions, gateway: deps.gateway, pages: [...(deps.pages ?? PAGES), ...UNLISTED_PAGES], publicUrl: o.publicUrl, gatewayUrl: o.gatewayUrl, deployEnabled: o.deployEnabled, secureCookie: o.secureCookie });
    assetRoutes(scope, { core: join(here, "assets"), pages: join(here, "pages", "assets") });
  });
  return app;
}
