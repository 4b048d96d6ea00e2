import { createBus, createDb, createLogger, createMetrics, migrate, onShutdown, pingDb, refuseStart, startNodeAgent } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type NotifierConfig } from "./config.js";
import { deliveryServiceFactory } from "./domain/delivery-service.js";
import { deliveryWorkerFactory } from "./domain/delivery-worker.js";
import { eventIntakeFactory } from "./domain/event-intake.js";
import { historyPrunerFactory } from "./domain/history-pruner.js";
import { endpointLabel, webhookMetricsFactory } from "./domain/webhook-metrics.js";
import { webhookSenderFactory } from "./domain/webhook-sender.js";
import { startEventConsumer } from "./messaging/event-consumer.js";
import { deliveryStoreFactory } from "./store/delivery-store.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type NotifierDatabase } from "./store/schema.js";

/** Attempts in flight to one endpoint from one notifier. */
const CONCURRENCY_PER_ENDPOINT = 4;
/** How often an idle endpoint looks for deliveries another notifier recorded or a redelivery. */
const POLL_MS = 1000;

let config: NotifierConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("notifier", err);
}

const { log, ring } = createLogger("notifier", config.logLevel);
const metrics = createMetrics("notifier");
const { db, pool } = createDb<NotifierDatabase>(config.databaseUrl, { configured: config.databasePoolSize, applicationName: "svc-notifier", max: 6 });
try {
  const applied = await migrate(db as never, pool, SCHEMA, migrations);
  if (applied.length) log.info({ applied }, "applied migrations");
} catch (err) {
  log.fatal({ err }, "could not migrate the notifier schema");
  process.exit(1);
}

const store = deliveryStoreFactory(db);
const meters = webhookMetricsFactory(metrics.registry, () => store.countOpen());
const sender = webhookSenderFactory({ allowInternal: config.allowInternal, timeoutMs: config.timeoutMs, maxSockets: CONCURRENCY_PER_ENDPOINT });
const worker = deliveryWorkerFactory({
  store,
  sender,
  endpoints: config.endpoints,
  retries: config.retries,
  retryBaseMs: config.retryBaseMs,
  leaseMs: config.timeoutMs + 5000,
  concurrency: CONCURRENCY_PER_ENDPOINT,
  pollMs: POLL_MS,
  log,
  metrics: meters,
});
const intake = eventIntakeFactory({ store, endpoints: config.endpoints, enabled: config.enabled, metrics: meters, wake: (url) => worker.wake(url) });

// Control plane (heartbeat, logs, meters) on the shared bus; events on a connection of our own.
const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: "notifier", log });
const consumer = startEventConsumer({
  url: config.natsUrl,
  tenant: config.tenant,
  log,
  handle: intake,
  onBacklog: (n) => meters.waiting.set(n),
  onUnreadable: () => meters.events.inc({ result: "unreadable" }),
});
const agent = startNodeAgent({
  bus,
  settings: config.settings,
  metrics,
  ring,
  status: () => ({ nats: bus.connected() ? "up" : "down", events: consumer.ready() ? "up" : "down" }),
});

// Records are kept for svc.webhook-history whether or not delivery is on.
const pruner = historyPrunerFactory({ store, historyMs: config.historyMs, log, onPruned: (what, n) => meters.pruned.inc({ what }, n) });
pruner.start();

if (config.enabled) {
  worker.start();
  if (config.endpoints.length === 0) log.warn("svc.webhook is on but svc.webhook-endpoints lists no endpoint: nothing will be delivered");
  if (config.allowInternal) log.warn("svc.webhook-allow-internal is on: webhooks may go to plain http and to loopback, private and link-local addresses");
} else {
  log.info("webhook delivery is off (svc.webhook=false): artifact events are read and acknowledged without deliveries");
}

const app = buildApp({
  log,
  internalSecret: config.internalSecret,
  deliveries: deliveryServiceFactory({ store, endpoints: config.endpoints, enabled: config.enabled, wake: (url) => worker.wake(url) }),
  checks: [
    { name: "postgres", check: () => pingDb(pool) },
    { name: "events", check: async () => (consumer.ready() ? { ok: true } : { ok: false, error: "not consuming events" }) },
  ],
  metrics,
});
await app.listen({ host: config.host, port: config.port });
log.info(
  {
    enabled: config.enabled,
    // Without query strings: a receiver's token may travel in one.
    endpoints: config.endpoints.map((e) => ({ url: endpointLabel(e.url), events: e.allEvents ? "all" : e.kinds, signed: e.key !== undefined })),
    retries: config.retries,
    retryBaseMs: config.retryBaseMs,
    timeoutMs: config.timeoutMs,
    historyMs: config.historyMs,
  },
  "notifier service ready",
);

onShutdown(
  log,
  [
    () => app.close(),
    () => consumer.stop(),
    () => worker.stop(),
    () => pruner.stop(),
    async () => sender.close(),
    async () => agent.stop(),
    () => bus.close(),
    () => db.destroy(),
  ],
  config.shutdownGraceMs,
);
