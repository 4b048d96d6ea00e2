import { answerLogs, controlSubjects, createBus, createDb, createLogger, createMetrics, migrate, onShutdown, pingDb, refuseStart, startNodeAgent, type Heartbeat } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type AdminConfig } from "./config.js";
import { nodeRegistryFactory } from "./domain/node-registry.js";
import { capabilitiesOf } from "./routes/capability-routes.js";
import { limitStoreFactory } from "./store/limit-store.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type AdminDatabase } from "./store/schema.js";

let config: AdminConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("admin", err);
}

const { log, ring } = createLogger("admin", config.logLevel);
const metrics = createMetrics("admin");
const { db, pool } = createDb<AdminDatabase>(config.databaseUrl, { configured: config.databasePoolSize, applicationName: "svc-admin", max: 4 });
try {
  await migrate(db as never, pool, SCHEMA, migrations);
} catch (err) {
  log.fatal({ err }, "could not migrate the admin schema");
  process.exit(1);
}

const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: "admin", log });
const nodes = nodeRegistryFactory();
const control = controlSubjects(config.internalSecret);
bus.listen(control.heartbeat, (hb) => nodes.record(hb as Heartbeat));
const agent = startNodeAgent({ bus, settings: config, metrics, ring, status: () => ({ nats: bus.connected() ? "up" : "down" }) });

const app = buildApp({
  log,
  internalSecret: config.internalSecret,
  capabilities: capabilitiesOf(config),
  checks: [{ name: "postgres", check: () => pingDb(pool) }],
  operations: {
    settings: config,
    bus,
    control,
    nodes,
    limits: limitStoreFactory(db),
    metrics,
    ownLogs: (q) => answerLogs(ring, metrics.node, "admin", q),
  },
});
await app.listen({ host: config.host, port: config.port });
log.info("admin service ready");

onShutdown(log, [() => app.close(), async () => agent.stop(), () => bus.close(), () => db.destroy()], config.shutdownGraceMs);
