import { subjectFor, type CredentialChanged } from "@svc/contracts";
import { createBus, createDb, createLogger, createMetrics, migrate, newEventId, onShutdown, pingDb, refuseStart, startNodeAgent } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type AuthConfig } from "./config.js";
import { credentialServiceFactory } from "./domain/credential-service.js";
import { principalServiceFactory } from "./domain/principal-service.js";
import { credentialStoreFactory } from "./store/credential-store.js";
import { subjectStoreFactory } from "./store/subject-store.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type AuthDatabase } from "./store/schema.js";

let config: AuthConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("auth", err);
}

const { log, ring } = createLogger("auth", config.logLevel);
const metrics = createMetrics("auth");
const { db, pool } = createDb<AuthDatabase>(config.databaseUrl, { configured: config.databasePoolSize, applicationName: "svc-auth" });
try {
  const applied = await migrate(db as never, pool, SCHEMA, migrations);
  if (applied.length) log.info({ applied }, "applied migrations");
} catch (err) {
  log.fatal({ err }, "could not migrate the auth schema");
  process.exit(1);
}

const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: "auth", log });
const agent = startNodeAgent({ bus, settings: config, metrics, ring, status: () => ({ nats: bus.connected() ? "up" : "down" }) });
// Awaited before a change is answered, so other gateways hear of it at once; when NATS is down
// this returns at once (logged), and svc.cache.ttl bounds how long other gateways may lag.
const publish = (change: Omit<CredentialChanged, "id" | "time" | "tenant">) =>
  bus.publish("credential.changed", { id: newEventId(), time: new Date().toISOString(), tenant: config.tenant, ...change });
const credentialStore = credentialStoreFactory(db);
const credentials = credentialServiceFactory({
  store: credentialStore,
  tenant: config.tenant,
  defaultLifetime: config.credentialDefaultLifetime,
  maxLifetime: config.credentialMaxLifetime,
  trackUsage: config.trackKeyUsage,
  publish,
});
const principals = principalServiceFactory({ credentials: credentialStore, subjects: subjectStoreFactory(db), publish });
// Changes made at start-up (bootstrap key, seeded admins) are announced like any other, so give
// NATS a moment to connect first; other gateways may hold the key in their caches. Bounded:
// without NATS the changes still apply, and svc.cache.ttl bounds how long others lag.
if (config.bootstrapKey || config.uiAdmins.length > 0) {
  if (!(await bus.ready(10_000))) log.warn("NATS is not reachable: start-up credential changes are not announced to other gateways");
}
if (config.uiAdmins.length > 0) {
  await principals.seedAdministrators(config.uiAdmins);
  log.info({ admins: config.uiAdmins }, "seeded deployment-wide administration for svc.ui.admins");
}

if (config.bootstrapKey) {
  const id = await credentials.provisionBootstrap(config.bootstrapKey);
  log.warn(
    { credentialId: id },
    "SECURITY svc.bootstrap-key is set: it holds every right on every repository and never expires. Issue real keys with it, then unset svc.bootstrap-key and restart; its entry stays until revoked.",
  );
}

const app = buildApp({
  log,
  internalSecret: config.internalSecret,
  credentials,
  principals,
  checks: [{ name: "postgres", check: () => pingDb(pool) }],
  metrics,
});
await app.listen({ host: config.host, port: config.port });
log.info({ events: subjectFor(config.tenant, "credential.changed") }, "auth service ready");

onShutdown(log, [() => app.close(), async () => agent.stop(), () => bus.close(), () => db.destroy()], config.shutdownGraceMs);
