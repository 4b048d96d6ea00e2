import { bootService, pingDb, postgresSchema } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { deliveryServiceFactory } from "./domain/delivery-service.js";
import { deliveryWorkerFactory } from "./domain/delivery-worker.js";
import { eventIntakeFactory } from "./domain/event-intake.js";
import { historyPrunerFactory } from "./domain/history-pruner.js";
import { webhookMetricsFactory } from "./domain/webhook-metrics.js";
import { webhookSenderFactory } from "./domain/webhook-sender.js";
import { logWebhookSettings, webhookSummary } from "./domain/webhook-startup.js";
import { startEventConsumer } from "./messaging/event-consumer.js";
import { deliveryStoreFactory } from "./store/delivery-store.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type NotifierDatabase } from "./store/schema.js";

/** Attempts in flight to one endpoint from one notifier. */
const CONCURRENCY_PER_ENDPOINT = 4;
/** How often an idle endpoint looks for deliveries another notifier recorded or a redelivery. */
const POLL_MS = 1000;

await bootService({
  name: "notifier",
  loadConfig,
  nodeSettings: (config) => config.settings,
  database: postgresSchema<NotifierDatabase>({ schema: SCHEMA, migrations, max: 6 }),
  wire({ config, log, metrics, db, pool }) {
    const { enabled, endpoints, retries, retryBaseMs, timeoutMs, historyMs } = config;
    const store = deliveryStoreFactory(db);
    const meters = webhookMetricsFactory(metrics.registry, () => store.countOpen());
    const sender = webhookSenderFactory({ allowInternal: config.allowInternal, timeoutMs, maxSockets: CONCURRENCY_PER_ENDPOINT });
    const worker = deliveryWorkerFactory({ store, sender, endpoints, retries, retryBaseMs, leaseMs: timeoutMs + 5000, concurrency: CONCURRENCY_PER_ENDPOINT, pollMs: POLL_MS, log, metrics: meters });
    const wake = (url: string) => worker.wake(url);
    const intake = eventIntakeFactory({ store, endpoints, enabled, metrics: meters, wake });
    // Events on a NATS connection of our own (a durable consumer); the control plane stays on the shared bus.
    const consumer = startEventConsumer({ url: config.natsUrl, tenant: config.tenant, log, handle: intake, onBacklog: (n) => meters.waiting.set(n), onUnreadable: () => meters.events.inc({ result: "unreadable" }) });
    // Records are kept for svc.webhook-history whether or not delivery is on.
    const pruner = historyPrunerFactory({ store, historyMs, log, onPruned: (what, n) => meters.pruned.inc({ what }, n) });
    pruner.start();
    if (enabled) worker.start();
    logWebhookSettings(config, log);
    const checks = [
      { name: "postgres", check: () => pingDb(pool) },
      { name: "events", check: async () => (consumer.ready() ? ({ ok: true } as const) : ({ ok: false, error: "not consuming events" } as const)) },
    ];
    const app = buildApp({ log, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, deliveries: deliveryServiceFactory({ store, endpoints, enabled, wake }), checks, metrics });
    return {
      app,
      ready: webhookSummary(config),
      status: () => ({ events: consumer.ready() ? "up" : "down" }),
      closers: [() => consumer.stop(), () => worker.stop(), () => pruner.stop(), async () => sender.close()],
    };
  },
});
