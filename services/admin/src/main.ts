import { answerLogs, answerSettings, bootService, controlSubjects, listenedControlSubjects, pingDb, postgresSchema, type AuditDatabase } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { contentCheckFactory } from "./domain/content-check.js";
import { liveSettingsFactory } from "./domain/live-settings.js";
import { nodeRegistryFactory } from "./domain/node-registry.js";
import { collectHeartbeats } from "./messaging/heartbeat-collector.js";
import { nodeControlFactory } from "./messaging/node-control.js";
import { capabilitiesOf } from "./routes/capability-routes.js";
import { limitStoreFactory } from "./store/limit-store.js";
import { meterSamplerFactory } from "./domain/meter-sampling.js";
import { listenForPublishes } from "./messaging/publish-listener.js";
import { meterSampleStoreFactory } from "./store/meter-sample-store.js";
import { migrations } from "./store/migrations.js";
import { runtimeSettingStoreFactory } from "./store/runtime-setting-store.js";
import { SCHEMA, type AdminDatabase } from "./store/schema.js";
import { ADMIN_AUDIT } from "./routes/audit-actions.js";
import { auditStoreFactory } from "./store/audit-store.js";
import { auditPurgerFactory } from "./domain/audit-purger.js";
import type { Kysely } from "kysely";

void bootService({
  name: "admin",
  audit: ADMIN_AUDIT,
  loadConfig,
  database: postgresSchema<AdminDatabase>({ schema: SCHEMA, migrations, max: 4 }),
  async wire({ config, log, ring, metrics, bus, db, pool }) {
    const nodes = nodeRegistryFactory();
    const control = controlSubjects(config.internalSecret);
    const runtimeSettings = runtimeSettingStoreFactory(db);
    const live = liveSettingsFactory({ config, store: runtimeSettings, log });
    // A node started after a change runs with the stored value from its first answer.
    await live.refresh();
    for (const listened of listenedControlSubjects(config)) {
      collectHeartbeats({ bus, subject: listened.heartbeat, nodes });
      // Another admin node changed a run-time setting: read the stored values again.
      bus.listen(listened.settingsChanged, () => void live.fresh());
    }
    // The heartbeats tell which nodes exist, so a gathering need not wait out its window.
    const peers = nodeControlFactory({ bus, control, nodes, self: metrics.node });
    // The deployment's meters sampled into Postgres for the console's charts, once per interval across the admin nodes.
    const samples = meterSampleStoreFactory(db, metrics.node);
    const sampler = meterSamplerFactory({
      store: samples,
      gather: async () => [await metrics.snapshot(), ...(await peers.gatherMetrics()).map((r) => r.metrics)],
      intervalMs: config.metricsSampleIntervalMs,
      historyMs: config.metricsHistoryMs,
      log,
    });
    listenForPublishes({ bus, store: samples, log });
    // The audit trail's schema shares the pool: its own name, the same database.
    const audit = auditStoreFactory(db as unknown as Kysely<AuditDatabase>);
    const purger = auditPurgerFactory({ store: audit, settings: live.current, log });
    const app = buildApp({
      audit,
      log,
      internalSecret: config.internalSecret,
      internalSecretPrevious: config.internalSecretPrevious,
      capabilities: capabilitiesOf(config),
      checks: [{ name: "postgres", check: () => pingDb(pool) }],
      ownSettings: () => answerSettings(config, metrics.node, "admin"),
      peers,
      live,
      runtimeSettings,
      home: { samples, intervalMs: config.metricsSampleIntervalMs },
      operations: {
        settings: config,
        nodes,
        content: contentCheckFactory({ ask: peers.gatherContent, nodes: nodes.live }),
        limits: limitStoreFactory(db),
        metrics,
        ownLogs: (q) => answerLogs(ring, metrics.node, "admin", q),
      },
    });
    sampler.start();
    return { app, onListening: () => purger.start(), closers: [() => sampler.stop(), () => purger.stop()] };
  },
});
