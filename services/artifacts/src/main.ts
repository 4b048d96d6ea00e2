import { createBus, createDb, createLogger, createMetrics, migrate, onShutdown, pingDb, refuseStart, startNodeAgent } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type ArtifactsConfig } from "./config.js";
import { artifactServiceFactory } from "./domain/artifact-service.js";
import { downloadRecorderFactory } from "./domain/download-recorder.js";
import { fileStoreFactory } from "./store/file-store.js";
import { outboxRelayFactory } from "./domain/outbox-relay.js";
import { metadataStoreFactory } from "./store/metadata-store.js";
import { outboxStoreFactory } from "./store/outbox-store.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type ArtifactsDatabase } from "./store/schema.js";

let config: ArtifactsConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("artifacts", err);
}

const { log, ring } = createLogger("artifacts", config.logLevel);
const metrics = createMetrics("artifacts");
const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: "artifacts", log });
const agent = startNodeAgent({ bus, settings: config, metrics, ring, status: () => ({ nats: bus.connected() ? "up" : "down" }) });
const { db, pool } = createDb<ArtifactsDatabase>(config.databaseUrl, { configured: config.databasePoolSize, applicationName: "svc-artifacts" });
try {
  await migrate(db as never, pool, SCHEMA, migrations);
} catch (err) {
  log.fatal({ err }, "could not migrate the artifacts schema");
  process.exit(1);
}

const metadata = metadataStoreFactory(db);
await metadata.ensureRepository(config.repository, "raw");
let repositories = new Set(await metadata.repositoryNames());
const files = fileStoreFactory({ root: config.filesystemRoot, readOnly: config.readOnly });
await files.init([...repositories]);
// Repositories created by another replica become visible here within seconds.
const refresh = setInterval(() => {
  metadata
    .repositoryNames()
    .then(async (names) => {
      const fresh = names.filter((n) => !repositories.has(n));
      if (fresh.length) await files.init(fresh);
      repositories = new Set(names);
    })
    .catch((err) => log.warn({ err }, "could not refresh the repository list"));
}, 5000);
refresh.unref();

// Events: written to the outbox with each change, published before the request is answered
// (JetStream message id = event id), and relayed again from the outbox while NATS is away.
const outbox = outboxStoreFactory(db);
const relay = outboxRelayFactory({ outbox, publish: (e) => bus.publish(e.kind, e as never), log });
relay.start();
const artifacts = artifactServiceFactory({ files, metadata, outbox, deliver: relay.deliver, tenant: config.tenant });
const downloads = downloadRecorderFactory({ store: metadata, log });
downloads.start();

if (config.readOnly) log.warn("svc.read-only is on: every artifact write is refused with 403");

const app = buildApp({
  log,
  internalSecret: config.internalSecret,
  files,
  metadata,
  artifacts,
  downloads,
  repositories: () => repositories,
  checks: [{ name: "postgres", check: () => pingDb(pool) }],
  metrics,
});
await app.listen({ host: config.host, port: config.port });
log.info({ root: config.filesystemRoot, repository: config.repository }, "artifacts service ready");

onShutdown(log, [() => app.close(), () => downloads.stop(), () => relay.stop(), async () => agent.stop(), () => bus.close(), () => db.destroy()], config.shutdownGraceMs);
