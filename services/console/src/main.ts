import { bootService, liveSettingsFollower, pingDb, postgresSchema } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { configuredProviders } from "./domain/identity-providers.js";
import { gatewayApiFactory } from "./domain/gateway-api.js";
import { sessionServiceFactory } from "./domain/session-service.js";
import { sessionEventsFactory } from "./messaging/session-events.js";
import { SIGN_IN_MAX_AGE_MS } from "./routes/login-routes.js";
import { migrations } from "./store/migrations.js";
import { sessionStoreFactory } from "./store/session-store.js";
import { SCHEMA, type ConsoleDatabase } from "./store/schema.js";

/** How often ended and expired sessions, and abandoned sign-ins, are swept from the table. */
const PRUNE_EVERY_MS = 10 * 60_000;

void bootService({
  name: "console",
  loadConfig,
  database: postgresSchema<ConsoleDatabase>({ schema: SCHEMA, migrations, max: 4 }),
  async wire({ config, log, metrics, bus, db, pool }) {
    const store = sessionStoreFactory(db);
    const sessions = sessionServiceFactory({
      store,
      events: sessionEventsFactory({ bus, tenant: config.tenant, log }),
      tenant: config.tenant,
      lifetimeMs: config.uiSessionLifetimeMs,
      idleTimeoutMs: config.uiSessionIdleTimeoutMs,
    });
    // svc.ui.deploy changes at run time (PUT /api/settings/ui.deploy): pages read the live value.
    const follower = liveSettingsFollower({ config, adminUrl: config.adminUrl, caller: "console", bus, log });
    void follower.refresh();
    const providers = configuredProviders(config, log);
    if (providers.length === 0 && config.profile !== "dev") {
      log.warn("no identity provider is configured (svc.ui.oidc.* or svc.ui.oauth.*): console sign-in is disabled");
    }
    const plainHttpIssuer = config.uiOidcIssuerUri.startsWith("http:");
    if (plainHttpIssuer) log.warn({ issuer: config.uiOidcIssuerUri }, "SECURITY svc.ui.oidc.issuer-uri is plain http (allowed on loopback only, for local runs)");
    const app = buildApp({
      log,
      internalSecret: config.internalSecret,
      internalSecretPrevious: config.internalSecretPrevious,
      checks: [{ name: "postgres", check: () => pingDb(pool) }],
      metrics,
      sessions,
      signIns: store,
      providers,
      gateway: gatewayApiFactory({ gatewayUrl: config.uiGatewayUrl }),
      options: {
        devProfile: config.profile === "dev",
        secureCookie: config.uiSecureCookie,
        publicUrl: config.uiPublicUrl,
        gatewayUrl: config.uiGatewayUrl,
        deployEnabled: () => follower.current().uiDeploy,
      },
    });
    let pruner: NodeJS.Timeout | undefined;
    return {
      app,
      ready: { providers: providers.map((p) => p.kind), devProfile: config.profile === "dev" },
      onListening: () => {
        pruner = setInterval(() => void store.prune(SIGN_IN_MAX_AGE_MS).catch((err: unknown) => log.warn({ err }, "could not sweep old sessions")), PRUNE_EVERY_MS);
        pruner.unref();
      },
      // The posture (admin) warns of a plain-http issuer whichever node holds the setting.
      status: (): Record<string, string> => (plainHttpIssuer ? { "oidc-issuer": "plain-http" } : {}),
      closers: [() => clearInterval(pruner), () => follower.close()],
    };
  },
});
