import { bootService, pingDb, postgresSchema } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { artifactServiceFactory, type ArtifactServiceDeps } from "./domain/artifact-service.js";
import { downloadRecorderFactory } from "./domain/download-recorder.js";
import { filesystemBlobStore } from "@svc/blobs";
import { migrateLegacyLayout } from "./domain/legacy-layout.js";
import { outboxRelayFactory } from "./domain/outbox-relay.js";
import { repositoryListFactory } from "./domain/repository-list.js";
import { repositoryAdminFactory } from "./domain/repository-admin.js";
import { npmCoordinates } from "./domain/npm-documents.js";
import { npmRegistryFactory, npmTarballRemoval } from "./domain/npm-registry.js";
import { artifactCopierFactory, rawExportFactory } from "./domain/export-steps.js";
import { npmExportFactory } from "./domain/npm-export.js";
import { mavenExportFactory } from "./domain/maven-export.js";
import { pypiExportFactory } from "./domain/pypi-export.js";
import { repositoryExportFactory } from "./domain/repository-export.js";
import { exportStoreFactory } from "./store/export-store.js";
import { npmHandler } from "./routes/npm-routes.js";
import { npmStoreFactory } from "./store/npm-store.js";
import { mavenCoordinates } from "./domain/maven-layout.js";
import { mavenFileIndexing, mavenFileRemoval, mavenRepositoryFactory } from "./domain/maven-repository.js";
import { mavenHandler } from "./routes/maven-routes.js";
import { mavenStoreFactory } from "./store/maven-store.js";
import { pypiCoordinates } from "./domain/pypi-index.js";
import { pypiRegistryFactory } from "./domain/pypi-registry.js";
import { pypiHandler } from "./routes/pypi-routes.js";
import { pypiStoreFactory } from "./store/pypi-store.js";
import { artifactEventPublisherFactory } from "./messaging/artifact-event-publisher.js";
import { metadataStoreFactory } from "./store/metadata-store.js";
import { outboxStoreFactory } from "./store/outbox-store.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type ArtifactsDatabase } from "./store/schema.js";

await bootService({
  name: "artifacts",
  loadConfig,
  database: postgresSchema<ArtifactsDatabase>({ schema: SCHEMA, migrations }),
  async wire({ config, log, metrics, bus, db, pool }) {
    const metadata = metadataStoreFactory(db, pool);
    await metadata.ensureRepository(config.repository, config.repositoryFormat);
    // Content by digest; the path index in Postgres says which path holds which (the single truth).
    const blobs = filesystemBlobStore({ root: config.filesystemRoot, readOnly: config.readOnly });
    await blobs.init();
    const repositories = repositoryListFactory({ metadata, log });
    await repositories.start();
    // Events: written to the outbox with each change, published as the request is answered
    // (JetStream message id = event id), and relayed again from the outbox while NATS is away.
    const outbox = outboxStoreFactory(db);
    const relay = outboxRelayFactory({ outbox, publish: artifactEventPublisherFactory(bus), log });
    relay.start();
    // A package file's events carry its coordinates in the repository's format.
    const coordinatesOf: Record<string, (path: string) => ReturnType<typeof npmCoordinates>> = { npm: npmCoordinates, maven: mavenCoordinates, pypi: pypiCoordinates };
    const coordinates = (repository: string, path: string) => coordinatesOf[repositories.formatOf(repository) ?? ""]?.(path);
    // A format's rows about a file go with it, whatever removes it (PyPI's follow by a cascade: store/pypi-store.ts).
    const npmStore = npmStoreFactory(db, pool);
    const mavenStore = mavenStoreFactory(db);
    const removingOf: Record<string, NonNullable<ArtifactServiceDeps["removing"]>> = { npm: npmTarballRemoval(npmStore), maven: mavenFileRemoval({ store: mavenStore, metadata }) };
    const removing: ArtifactServiceDeps["removing"] = async (tx, a) => removingOf[repositories.formatOf(a.repository) ?? ""]?.(tx, a);
    // And a file the walker indexes (a deploy's that crashed before its commit) gets the rows its deploy would have.
    const indexingOf: Record<string, NonNullable<ArtifactServiceDeps["indexing"]>> = { maven: mavenFileIndexing({ store: mavenStore }) };
    const indexing: ArtifactServiceDeps["indexing"] = async (tx, a, at) => indexingOf[repositories.formatOf(a.repository) ?? ""]?.(tx, a, at);
    const indexes = (repository: string) => indexingOf[repositories.formatOf(repository) ?? ""] !== undefined;
    const artifacts = artifactServiceFactory({ blobs, metadata, outbox, deliver: relay.deliver, tenant: config.tenant, coordinates, removing, indexing, indexes });
    // A data folder the code before the blob store wrote is migrated before anything is served.
    await migrateLegacyLayout({ root: config.filesystemRoot, blobs, artifacts, metadata, pool, log });
    // Staged leftovers of uploads a crash interrupted more than a day ago (the walker's reclaim takes younger ones after its grace).
    if (!config.readOnly) for (const s of await blobs.listStaged({ limit: 10_000 })) await blobs.deleteStaged(s.name, 86_400_000);
    const npm = npmHandler({ npm: npmRegistryFactory({ store: npmStore, metadata, artifacts, readOnly: config.readOnly }), store: npmStore, artifacts, publicUrl: config.uiPublicUrl });
    const maven = mavenRepositoryFactory({ store: mavenStore, artifacts, metadata, blobs, readOnly: config.readOnly });
    const publisherOf = (repository: string) => (repositories.formatOf(repository) === "maven" ? maven.deploy : undefined);
    const pypiStore = pypiStoreFactory(db);
    const pypiRegistry = pypiRegistryFactory({ store: pypiStore, artifacts, readOnly: config.readOnly });
    const pypi = pypiHandler({ registry: pypiRegistry, store: pypiStore });
    const admin = repositoryAdminFactory({ metadata, blobs, artifacts, list: repositories });
    // Each format's export step; a format missing here is refused an export, naming it.
    const copy = artifactCopierFactory({ metadata, blobs, artifacts });
    const deployCopy = artifactCopierFactory({ metadata, blobs, artifacts: { publish: maven.deploy } });
    const formats = { raw: rawExportFactory({ metadata, copy }), npm: npmExportFactory({ store: npmStore, metadata, copy }), maven: mavenExportFactory({ metadata, deploy: deployCopy, copy }), pypi: pypiExportFactory({ store: pypiStore, metadata, blobs, registry: pypiRegistry }) };
    const exports = repositoryExportFactory({ metadata, store: exportStoreFactory(db), formats, readOnly: config.readOnly, log });
    await exports.sweep();
    const downloads = downloadRecorderFactory({ store: metadata, log });
    downloads.start();
    if (config.readOnly) log.warn("svc.read-only is on: every artifact write is refused with 403");
    const checks = [{ name: "postgres", check: () => pingDb(pool) }];
    const app = buildApp({ log, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, blobs, metadata, artifacts, admin, exports, formatOf: repositories.formatOf, npm, maven: mavenHandler({ maven, metadata, blobs }), mavenOptions: maven, publisherOf, pypi, pypiRegistry, downloads, repositories: repositories.names, checks, metrics, uploadIdleTimeoutMs: config.uploadIdleTimeoutMs });
    return { app, ready: { root: config.filesystemRoot, repository: config.repository }, closers: [() => exports.stop(), () => downloads.stop(), () => relay.stop()] };
  },
});
