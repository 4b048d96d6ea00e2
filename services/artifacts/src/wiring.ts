import { join } from "node:path";
import pg from "pg";
import { Counter } from "prom-client";
import { controlSubjects, listenedControlSubjects, liveSettingsFollower, pingDb, type Bus, type BootContext, type DatabaseContext, type Wiring } from "@svc/kit";
import { buildApp } from "./app.js";
import type { ArtifactsConfig } from "./config.js";
import { contentReporterFactory, storageLocator } from "./domain/content-report.js";
import { artifactServiceFactory } from "./domain/artifact-service.js";
import { anonymousReadFactory } from "./domain/anonymous-access.js";
import { downloadRecorderFactory } from "./domain/download-recorder.js";
import { indexReadCacheFactory } from "./domain/index-read-cache.js";
import { blobStoreHealthChecks, openBlobStore, storageIdentity, storageStatus, withSmallBlobCache, type OpenedBlobStore } from "@svc/blobs";
import type { ByteRedirect } from "./routes/artifact-answer.js";
import { migrateLegacyLayout } from "./domain/legacy-layout.js";
import { outboxRelayFactory } from "./domain/outbox-relay.js";
import { repositoryListFactory } from "./domain/repository-list.js";
import { quotaFactory, registerQuotaMeters } from "./domain/quota.js";
import { repositoryAdminFactory } from "./domain/repository-admin.js";
import { repositoryExportFactory } from "./domain/repository-export.js";
import { exportStoreFactory } from "./store/export-store.js";
import type { FormatModule } from "./formats/format.js";
import { formatsOf } from "./formats/format.js";
import { FORMATS } from "./formats/index.js";
import { gateSettingsOf, wireGate } from "./gate/index.js";
import { artifactEventPublisherFactory } from "./messaging/artifact-event-publisher.js";
import { metadataStoreFactory } from "./store/metadata-store.js";
import { browseStoreFactory } from "./store/browse-store.js";
import { openCredentials, sealCredentials, type UpstreamConfig } from "./proxy/upstream.js";
import { upstreamsFactory } from "./proxy/file-fetch.js";
import { fetchRelayClient, fetchStreamsStore, nodeUrlOf } from "./proxy/fetch-relay.js";
import { proxyImportFactory } from "./domain/proxy-import.js";
import { outboxStoreFactory } from "./store/outbox-store.js";
import type { ArtifactsDatabase } from "./store/schema.js";
import { buildCacheServiceFactory } from "./build-cache/build-cache-service.js";
import { buildCacheStoreFactory } from "./build-cache/build-cache-store.js";

export type ArtifactsContext = Pick<BootContext<ArtifactsConfig>, "config" | "log" | "metrics"> & { bus: Pick<Bus, "publish" | "subscribe" | "connected" | "losses" | "respond" | "listen" | "announce"> } & DatabaseContext<ArtifactsDatabase>;

/**
 * The artifacts service wired from its settings, database and bus (main.ts boots it): the
 * stores, the artifact service, the formats of `table` (formats/index.ts) and the app.
 */
export async function wireArtifacts({ config, log, metrics, bus, db, pool, replica }: ArtifactsContext, table: readonly FormatModule[] = FORMATS): Promise<Wiring> {
  const metadata = metadataStoreFactory(db, pool);
  // What a downloaded path holds, kept in memory: evicted by this process's changes as they
  // commit and by other processes' artifact events (docs/internals/storage.md, "The read cache").
  const lookups = new Counter({ name: "svc_index_cache_lookups_total", help: "Downloads' index look-ups: answered from the read cache (hit), from Postgres (miss), or from Postgres with the cache off or bypassed while NATS is away (off)", labelNames: ["result"] as const, registers: [metrics.registry] });
  const reads = indexReadCacheFactory({ find: metadata.findForRead, ttlMs: config.indexCacheTtlMs, maxEntries: 50_000, feed: { connected: bus.connected, losses: bus.losses }, count: (result) => lookups.inc({ result }) });
  metadata.changes.listen(reads.changed);
  bus.subscribe("artifact.published", (e) => reads.published(e.repository, e.path, e.digest.slice("sha256:".length), e.time));
  bus.subscribe("artifact.removed", (e) => reads.evict(e.repository, e.path));
  // On a read replica (a read-only mirror's, docs/install/read-only-mirror.md) nothing is written: the writer made the row.
  if (!replica) await metadata.ensureRepository(config.repository, config.repositoryFormat);
  // Content by digest; the path index in Postgres says which path holds which (the single truth).
  // svc.storage: a folder or an S3 bucket; a missing bucket or refused credentials refuse the start, naming the setting.
  const opened = await openBlobStore(config);
  // Small blobs kept in memory on a backend where each read is a round trip (S3); the filesystem reads them from the page cache.
  const blobs = withSmallBlobCache(opened.store);
  const repositories = repositoryListFactory({ metadata, log });
  await repositories.start();
  const announceTo = controlSubjects(config.internalSecret);
  for (const listened of listenedControlSubjects(config)) bus.listen(listened.repositories, () => void repositories.refresh().catch((err) => log.warn({ err }, "could not refresh the repository list")));
  // Events: written to the outbox with each change, published as the request is answered
  // (JetStream message id = event id), and relayed again from the outbox while NATS is away.
  const outbox = outboxStoreFactory(db);
  const relay = outboxRelayFactory({ outbox, publish: artifactEventPublisherFactory(bus), log });
  // A read-only node makes no events; its sweep would take the writer's undelivered ones from the
  // shared outbox to its own NATS (a mirror, docs/install/read-only-mirror.md), and the writer's subscribers would never see them.
  if (!config.readOnly) relay.start();
  // Each repository's format: its events' package coordinates, its rows about a file that goes
  // (whatever removes it) and about a file a walk indexes, its protocol, routes and export.
  const formats = formatsOf(table, repositories.formatOf);
  // The screening gate: every publish of a package version is checked (docs/administration/screening.md).
  // Its actions and threshold change at run time (PUT /api/settings/<name>): read from the admin
  // service's stored values at start, on each change it announces, and every 30 s.
  const live = liveSettingsFollower({ config, adminUrl: config.adminUrl, caller: "artifacts", bus, log });
  void live.refresh();
  // svc.gate.min-age may be set for this deployment's tenant (PUT /api/settings/gate.min-age?tenant=).
  const minAge = () => live.forTenant(config.tenant).gateMinAge;
  const gate = wireGate({ config, pool, metadata, formats, log, replica: Boolean(replica), settings: () => gateSettingsOf(live.current())(), minAge });
  // Storage quotas (docs/administration/repositories.md, "Quotas"): enforced as each write commits; proxies evict.
  const quota = quotaFactory({ metadata, log, mayHaveQuota: repositories.hasQuota, artifacts: { removeForRetention: (...args) => artifacts.removeForRetention(...args) } });
  registerQuotaMeters(metrics.registry, metadata);
  const artifacts = artifactServiceFactory({ blobs, metadata, outbox, deliver: relay.deliver, tenant: config.tenant, ...formats.hooks, gate: gate.publishGate, quota });
  gate.attach(artifacts);
  // A hold or release on another node: the read cache must not serve (or refuse) the old state.
  bus.subscribe("artifact.held", (e) => reads.evict(e.repository, e.path));
  bus.subscribe("artifact.released", (e) => reads.evict(e.repository, e.path));
  // Proxy repositories: their upstreams (credentials opened with svc.internal-secret, or the previous one while it rotates).
  // Opened once per sealed value (every request to a proxy repository asks).
  const openedUpstreams = new Map<string, UpstreamConfig>();
  const upstreamOf = (repository: string): UpstreamConfig | undefined => {
    const u = repositories.upstreamOf(repository);
    if (!u) return undefined;
    if (u.sealed === null) return { url: u.url };
    const key = `${repository}\0${u.url}\0${u.sealed}`;
    const known = openedUpstreams.get(key);
    if (known) return known;
    // Kept whether or not it opened: a sealed value that does not open is logged once, not per request.
    const open = openUpstream(repository, u.url, u.sealed);
    openedUpstreams.set(key, open);
    return open;
  };
  const openUpstream = (repository: string, url: string, sealed: string): UpstreamConfig => {
    for (const secret of [config.internalSecret, config.internalSecretPrevious].filter((x) => x !== "")) {
      try {
        return { url, credentials: openCredentials(sealed, secret) };
      } catch {
        /* sealed under the other secret */
      }
    }
    log.error({ repository }, "a proxy repository's upstream credentials do not open with svc.internal-secret (nor svc.internal-secret-previous): its upstream is asked without them");
    return { url };
  };
  // The proxies' locks, on connections of their own, none opened until a fetch: the file fetches'
  // and, apart (a file fetch may revalidate a document under its lock), the metadata documents'.
  // At most svc.database-pool-size each when it is set.
  const lockMax = (n: number) => (config.databasePoolSize > 0 ? Math.min(n, config.databasePoolSize) : n);
  const lockPool = new pg.Pool({ connectionString: config.databaseUrl, max: lockMax(16), application_name: "svc-artifacts-proxy-locks" });
  lockPool.on("error", (err) => log.warn({ err }, "a proxy fetch lock's connection failed"));
  const documentLockPool = new pg.Pool({ connectionString: config.databaseUrl, max: lockMax(8), application_name: "svc-artifacts-proxy-document-locks" });
  documentLockPool.on("error", (err) => log.warn({ err }, "a proxy document lock's connection failed"));
  const proxySettings = () => {
    const now = live.current();
    return { metadataTtlMs: now.proxyMetadataTtlMs, metadataStaleMs: now.proxyMetadataStaleMs, blockPrivate: now.blockPrivateImportHosts };
  };
  // Fetched files stream to their clients through a spool on disk: beside the blobs' staged copies on the filesystem store (the system's temporary folder may be memory).
  const spoolDir = opened.kind === "filesystem" ? join(config.filesystemRoot, "tmp") : undefined;
  // A request on another node for a file this node fetches is streamed from here (proxy/fetch-relay.ts).
  const fetchRelay = { self: nodeUrlOf(config), streams: fetchStreamsStore(pool), open: fetchRelayClient({ internalSecret: config.internalSecret, tenant: config.tenant }), blob: (sha256: string) => blobs.get(sha256) };
  const upstreams = upstreamsFactory({ pool, lockPool, documentLockPool, metadata, artifacts, screen: gate.publishGate.screen, ...(spoolDir ? { spoolDir } : {}), upstreamOf, settings: proxySettings, readOnly: config.readOnly, log, actor: { kind: "system", id: "proxy" }, registry: metrics.registry, evict: quota.evict, relay: fetchRelay });
  // svc.storage.s3.redirect (only with svc.storage=s3: config.ts refuses it otherwise): the bucket sends a GET's bytes.
  const redirect = redirectOf(opened, config);
  if (redirect) log.info({ ttlMs: config.s3RedirectTtlMs }, "svc.storage.s3.redirect is on: artifact GETs are answered with a signed URL of the bucket");
  formats.build({ db, pool, metadata, blobs, artifacts, redirect, readOnly: config.readOnly, publicUrl: config.uiPublicUrl, anonymousRead: anonymousReadFactory(config, repositories.scopeFromPath), log, audit: gate.audit, proxy: { upstreamOf, upstreams, settings: proxySettings, screenVersions: gate.screenVersions, tooYoung: gate.tooYoung } });
  // A data folder the code before the blob store wrote is migrated before anything is served.
  if (opened.kind === "filesystem") await migrateLegacyLayout({ root: config.filesystemRoot, blobs: opened.store, artifacts, metadata, pool, log });
  // Staged leftovers of uploads a crash interrupted more than a day ago (the walker's reclaim takes younger ones after its grace).
  if (!config.readOnly) for (const s of await blobs.listStaged({ limit: 10_000 })) await blobs.deleteStaged(s.name, 86_400_000);
  const admin = repositoryAdminFactory({
    metadata,
    blobs,
    artifacts,
    list: repositories,
    formats: formats.names,
    proxyFormats: formats.proxyFormats(),
    blockPrivate: () => live.current().blockPrivateImportHosts,
    seal: (c) => sealCredentials(c, config.internalSecret),
    // Every gateway applies a repository's scopeFromPath as it hears it (and every other artifacts node reads the list again).
    announce: (change) => bus.announce(announceTo.repositories, change),
  });
  // A format without an export step is refused an export, naming it.
  const exports = repositoryExportFactory({ metadata, store: exportStoreFactory(db), formats: formats.exports(), readOnly: config.readOnly, log });
  if (!replica) await exports.sweep();
  // Imports into proxy repositories: resumed by whichever node notices their node stopped.
  const imports = proxyImportFactory({ pool, metadata, isProxy: (r) => upstreamOf(r) !== undefined, importOf: formats.importOf, coordinates: formats.hooks.coordinates, exports, readOnly: config.readOnly || Boolean(replica), log });
  imports.resumeOrphans();
  // On a read replica the counts have nowhere to go: retention's "not downloaded for" counts the writer's downloads.
  const downloads = downloadRecorderFactory({ store: replica ? { recordDownloads: async () => {} } : metadata, log });
  downloads.start();
  if (config.readOnly) log.warn("svc.read-only is on: every artifact write is refused with 403");
  // What this node serves at a few paths, for the posture's comparison of artifacts nodes (svc.nodes.content-differs).
  const content = contentReporterFactory({ pool, blobs, node: metrics.node, storageLocator: storageLocator(config) });
  for (const listened of listenedControlSubjects(config)) bus.respond(listened.content, (raw) => content.answer(raw));
  const checks = [{ name: "postgres", check: () => pingDb(pool) }, ...blobStoreHealthChecks(opened)];
  // Build caches (docs/integration/build-caches.md): entries are blobs like artifacts', indexed in
  // Postgres so every node serves the same caches; an evicted entry's blob goes as a removed
  // artifact's does, only when nothing else holds it.
  const buildCaches = buildCacheServiceFactory({
    store: buildCacheStoreFactory(pool),
    blobs,
    release: (digests) => artifacts.reclaim(digests, 0),
    defaults: { maxBytes: config.buildCacheMaxBytes, maxEntryBytes: config.buildCacheMaxEntryBytes },
    registry: metrics.registry,
  });
  gate.start();
  const app = buildApp({ browse: browseStoreFactory(db), buildCaches, gate: gate.routes, cooldownRefused: gate.cooldownRefused, redirect, log, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, blobs, metadata, reads, artifacts, admin, exports, imports, formats, downloads, repositories: repositories.names, membersOf: repositories.membersOf, checks, metrics, uploadIdleTimeoutMs: config.uploadIdleTimeoutMs, proxyFetch: upstreams.relayed });
  return { app, ready: { ...storageIdentity(config), repository: config.repository }, status: () => ({ ...storageStatus(config), ...gate.status() }), closers: [() => imports.stop(), () => live.close(), () => lockPool.end(), () => documentLockPool.end(), () => gate.stop(), () => exports.stop(), () => downloads.stop(), () => relay.stop(), ...(opened.kind === "s3" ? [async () => opened.store.close()] : [])] };
}

/** The GET redirect of svc.storage.s3.redirect: a signed URL of the blob's object, valid svc.storage.s3.redirect.ttl. */
function redirectOf(opened: OpenedBlobStore, config: ArtifactsContext["config"]): ByteRedirect | undefined {
  if (!config.s3Redirect || opened.kind !== "s3") return undefined;
  const store = opened.store;
  return (row, answer) => store.signedGetUrl(row.sha256, { expiresInSeconds: config.s3RedirectTtlMs / 1000, ...answer });
}
