import type { FastifyInstance } from "fastify";
import { createUpstreamApp, type UpstreamAppDeps } from "@svc/kit";
import type { ArtifactService } from "./domain/artifact-service.js";
import type { DownloadRecorder } from "./domain/download-recorder.js";
import type { RepositoryAdmin } from "./domain/repository-admin.js";
import type { GroupMember } from "./domain/repository-list.js";
import type { RepositoryExport } from "./domain/repository-export.js";
import type { BlobStore } from "@svc/blobs";
import type { Formats } from "./formats/format.js";
import type { MetadataStore } from "./store/metadata-store.js";
import type { IndexReadCache } from "./domain/index-read-cache.js";
import { exportRoutes } from "./routes/export-routes.js";
import { importRoutes } from "./routes/import-routes.js";
import type { ProxyImport } from "./domain/proxy-import.js";
import { internalRoutes, type InternalRoutesDeps } from "./routes/internal-routes.js";
import { rawRoutes, type RawRoutesDeps } from "./routes/raw-routes.js";
import type { ByteRedirect } from "./routes/artifact-answer.js";
import { repositoryRoutes } from "./routes/repository-routes.js";
import { packageRoutes } from "./routes/package-routes.js";
import type { BrowseStore } from "./store/browse-store.js";
import { gateRoutes, type GateRoutesDeps } from "./gate/gate-routes.js";
import { buildCacheRoutes } from "./build-cache/build-cache-routes.js";
import type { BuildCacheService } from "./build-cache/build-cache-service.js";

export interface ArtifactsDeps extends UpstreamAppDeps {
  blobs: BlobStore;
  metadata: MetadataStore;
  /** What a downloaded path holds, through the read cache. */
  reads: Pick<IndexReadCache, "find" | "evict">;
  artifacts: ArtifactService;
  downloads: Pick<DownloadRecorder, "record">;
  repositories: () => ReadonlySet<string>;
  /** A group repository's members in order; undefined for a hosted or proxy one. */
  membersOf?: (repository: string) => readonly GroupMember[] | undefined;
  admin: RepositoryAdmin;
  exports: RepositoryExport;
  /** Imports into proxy repositories. */
  imports: ProxyImport;
  /** The formats (formats/index.ts), built: each repository's protocol, and each format's own routes. */
  formats: Pick<Formats, "of" | "names" | "description" | "routes" | "catalog" | "optionFields">;
  /** svc.upload-idle-timeout; 0: never. */
  uploadIdleTimeoutMs: number;
  /** svc.storage.s3.redirect: artifact GETs answered with a signed URL of the bucket. */
  redirect?: ByteRedirect;
  /** The screening gate's administration routes (deny list, held files, findings, advisory status). */
  gate?: GateRoutesDeps;
  /** A request for a young version's file refused by the cooldown: kept in the refusal log. */
  cooldownRefused?: RawRoutesDeps["cooldownRefused"];
  /** The build caches (`/cache/...`, `/api/build-caches`). */
  buildCaches?: BuildCacheService;
  /** The console's views of a repository's content (packages, folders, search); absent: not served. */
  browse?: BrowseStore;
  /** A proxy fetch of this node's that another node streams (proxy/fetch-relay.ts), by id. */
  proxyFetch?: InternalRoutesDeps["proxyFetch"];
}

export function buildApp(deps: ArtifactsDeps): FastifyInstance {
  const app = createUpstreamApp(deps, { keepAliveTimeout: 65_000 });
  rawRoutes(app, deps);
  repositoryRoutes(app, deps);
  if (deps.browse) packageRoutes(app, { metadata: deps.metadata, browse: deps.browse, formats: deps.formats });
  exportRoutes(app, deps);
  importRoutes(app, deps);
  deps.formats.routes(app);
  internalRoutes(app, deps);
  if (deps.gate) gateRoutes(app, deps.gate);
  if (deps.buildCaches) buildCacheRoutes(app, { caches: deps.buildCaches, uploadIdleTimeoutMs: deps.uploadIdleTimeoutMs });
  return app;
}
