import { randomBytes } from "node:crypto";
import { createBus, createDb, createLogger, createMetrics, migrate, onShutdown, pingDb, refuseStart, startNodeAgent } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type WalkerConfig } from "./config.js";
import { artifactsClientFactory } from "./domain/artifacts-client.js";
import { leaseManagerFactory } from "./domain/lease.js";
import { localActionsFactory } from "./domain/local-actions.js";
import { schedulerFactory } from "./domain/scheduler.js";
import { walkMetricsFactory } from "./domain/walk-metrics.js";
import { walkRunnerFactory } from "./domain/walk-runner.js";
import { walkServiceFactory } from "./domain/walk-service.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type WalkerDatabase } from "./store/schema.js";
import { walkStoreFactory } from "./store/walk-store.js";

let config: WalkerConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("walker", err);
}

const { log, ring } = createLogger("walker", config.logLevel);
const metrics = createMetrics("walker");
const { db, pool } = createDb<WalkerDatabase>(config.databaseUrl, { configured: config.databasePoolSize, applicationName: "svc-walker", max: 4 });
try {
  const applied = await migrate(db as never, pool, SCHEMA, migrations);
  if (applied.length) log.info({ applied }, "applied migrations");
} catch (err) {
  log.fatal({ err }, "could not migrate the walker schema");
  process.exit(1);
}

const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: "walker", log });
const agent = startNodeAgent({ bus, settings: config, metrics, ring, status: () => ({ nats: bus.connected() ? "up" : "down" }) });

const store = walkStoreFactory(db);
// Unique per process: a restarted walker is a new holder, so its predecessor's runs read as interrupted.
const holder = `${metrics.node}#${randomBytes(3).toString("hex")}`;
const leases = leaseManagerFactory({ store, holder, log });
const artifacts = artifactsClientFactory({ baseUrl: config.artifactsUrl, internalSecret: config.internalSecret, tenant: config.tenant });
const runner = walkRunnerFactory({
  store,
  leases,
  source: artifacts,
  actions: { ...artifacts, ...localActionsFactory(config.filesystemRoot) },
  root: config.filesystemRoot,
  log,
  metrics: walkMetricsFactory(metrics),
  readOnly: config.readOnly,
});
const scheduler = schedulerFactory({ store, runner, log });
const walks = walkServiceFactory({ store, runner, changed: () => scheduler.reload() });
if (config.readOnly) log.warn("svc.read-only is on: walks look at the store and count, but change nothing");

const app = buildApp({ log, internalSecret: config.internalSecret, walks, checks: [{ name: "postgres", check: () => pingDb(pool) }], metrics });
await app.listen({ host: config.host, port: config.port });
scheduler.start();
log.info({ holder, root: config.filesystemRoot }, "walker service ready");

onShutdown(log, [() => app.close(), async () => scheduler.stop(), () => runner.stop(), async () => agent.stop(), () => bus.close(), () => db.destroy()], config.shutdownGraceMs);
