import { bootService, liveSettingsFollower, pingDb, postgresSchema, readWebhookSettings, type Settings, type WebhookConfig } from "@svc/kit";
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

void bootService({
  name: "notifier",
  loadConfig,
  nodeSettings: (config) => config.settings,
  database: postgresSchema<NotifierDatabase>({ schema: SCHEMA, migrations, max: 6 }),
  async wire({ config, log, metrics, bus, db, pool }) {
    // The webhook settings change at run time (PUT /api/settings/<name>): the follower lays the
    // stored values over the ones read at start, and `web` holds them read together. Everything
    // below reads `web` at each use, so a change applies from the next event or attempt.
    const follower = liveSettingsFollower({ config: config.settings, adminUrl: config.adminUrl, caller: "notifier", bus, log });
    let web: WebhookConfig = config;
    const store = deliveryStoreFactory(db);
    const meters = webhookMetricsFactory(metrics.registry, () => store.countOpen());
    const sender = webhookSenderFactory({
      get allowInternal() {
        return web.allowInternal;
      },
      get timeoutMs() {
        return web.timeoutMs;
      },
      maxSockets: CONCURRENCY_PER_ENDPOINT,
    });
    const worker = deliveryWorkerFactory({
      store,
      sender,
      endpoints: web.endpoints,
      get retries() {
        return web.retries;
      },
      get retryBaseMs() {
        return web.retryBaseMs;
      },
      get leaseMs() {
        return web.timeoutMs + 5000;
      },
      concurrency: CONCURRENCY_PER_ENDPOINT,
      pollMs: POLL_MS,
      log,
      metrics: meters,
    });
    const wake = (url: string) => worker.wake(url);
    // Read at each event and each call (a spread would copy today's values).
    const inForce = <T extends object>(deps: T) =>
      Object.defineProperties(deps, { endpoints: { get: () => web.endpoints, enumerable: true }, enabled: { get: () => web.enabled, enumerable: true } }) as T & Pick<WebhookConfig, "endpoints" | "enabled">;
    const intake = eventIntakeFactory(inForce({ store, metrics: meters, wake }));
    // Events on a NATS connection of our own (a durable consumer); the control plane stays on the shared bus.
    const consumer = startEventConsumer({ url: config.natsUrl, tenant: config.tenant, log, handle: intake, onBacklog: (n) => meters.waiting.set(n), onUnreadable: () => meters.events.inc({ result: "unreadable" }) });
    // Records are kept for svc.webhook-history whether or not delivery is on.
    const pruner = historyPrunerFactory({
      store,
      get historyMs() {
        return web.historyMs;
      },
      log,
      onPruned: (what, n) => meters.pruned.inc({ what }, n),
    });
    const apply = (settings: Settings, why: string) => {
      const read = readWebhookSettings(settings);
      if (read.problems.length > 0) {
        // The admin service checks a change as this does; values fixed here differently can still clash.
        log.warn({ problems: read.problems }, "the webhook settings changed at run time do not fit together here; keeping the ones in force");
        return;
      }
      web = read.config;
      worker.reconfigure(web.endpoints, web.enabled);
      log.info(webhookSummary(web), why);
    };
    follower.onChange((now) => apply(now, "webhook settings changed at run time"));
    // A node started after a change starts with the stored values.
    await follower.refresh();
    pruner.start();
    if (web.enabled) worker.start();
    logWebhookSettings(web, log);
    const checks = [
      { name: "postgres", check: () => pingDb(pool) },
      { name: "events", check: async () => (consumer.ready() ? ({ ok: true } as const) : ({ ok: false, error: "not consuming events" } as const)) },
    ];
    const app = buildApp({ log, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, deliveries: deliveryServiceFactory(inForce({ store, wake })), checks, metrics });
    return {
      app,
      ready: webhookSummary(web),
      status: () => ({ events: consumer.ready() ? "up" : "down" }),
      closers: [() => follower.close(), () => consumer.stop(), () => worker.stop(), () => pruner.stop(), async () => sender.close()],
    };
  },
});
