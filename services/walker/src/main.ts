import { randomBytes } from "node:crypto";
import { blobStoreHealthChecks, openBlobStore, storageIdentity, storageStatus } from "@svc/blobs";
import { bootService, pingDb, postgresSchema } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { artifactsClientFactory } from "./domain/artifacts-client.js";
import { leaseManagerFactory } from "./domain/lease.js";
import { schedulerFactory } from "./domain/scheduler.js";
import { walkMetricsFactory } from "./domain/walk-metrics.js";
import { walkRunnerFactory } from "./domain/walk-runner.js";
import { walkServiceFactory } from "./domain/walk-service.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type WalkerDatabase } from "./store/schema.js";
import { walkStoreFactory } from "./store/walk-store.js";

void bootService({
  name: "walker",
  loadConfig,
  database: postgresSchema<WalkerDatabase>({ schema: SCHEMA, migrations, max: 4 }),
  async wire({ config, log, metrics, db, pool }) {
    const store = walkStoreFactory(db);
    // Unique per process: a restarted walker is a new holder, so its predecessor's runs read as interrupted.
    const holder = `${metrics.node}#${randomBytes(3).toString("hex")}`;
    const leases = leaseManagerFactory({ store, holder, log });
    // Removals and their events go through the artifacts service: the walker publishes nothing itself.
    const artifacts = artifactsClientFactory({ baseUrl: config.artifactsUrl, internalSecret: config.internalSecret, tenant: config.tenant });
    // The store the artifacts service writes: the walk reads its listing and bytes, and removes staged leftovers.
    // svc.storage: a folder or an S3 bucket; a missing bucket or refused credentials refuse the start, naming the setting.
    const opened = await openBlobStore(config);
    const blobs = opened.store;
    const runner = walkRunnerFactory({
      store,
      leases,
      source: artifacts,
      actions: artifacts,
      blobs,
      reclaimGraceMs: config.storageReclaimGraceMs,
      log,
      metrics: walkMetricsFactory(metrics),
      readOnly: config.readOnly,
    });
    const scheduler = schedulerFactory({ store, runner, holder, log });
    const walks = walkServiceFactory({ store, runner, changed: () => scheduler.reload() });
    if (config.readOnly) log.warn("svc.read-only is on: walks look at the store and count, but change nothing");
    const app = buildApp({ log, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, walks, checks: [{ name: "postgres", check: () => pingDb(pool) }, ...blobStoreHealthChecks(opened)], metrics });
    return {
      app,
      onListening: () => scheduler.start(),
      ready: { holder, ...storageIdentity(config) },
      status: () => storageStatus(config),
      closers: [async () => scheduler.stop(), () => runner.stop(), ...(opened.kind === "s3" ? [async () => opened.store.close()] : [])],
    };
  },
});
