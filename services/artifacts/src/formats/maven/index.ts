import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { mavenExportFactory } from "./maven-export.js";
import { mavenCoordinates, parseMavenPath } from "./maven-layout.js";
import { mavenFileIndexing, mavenFileRemoval, mavenRepositoryFactory } from "./maven-repository.js";
import { mavenHandler, mavenOptionsRoutes } from "./maven-routes.js";
import { mavenMigrations } from "./maven-migrations.js";
import { mavenStoreFactory } from "./maven-store.js";
import { mavenGroupHandler } from "./maven-group.js";
import { mavenProxyFactory, mavenSpec } from "./maven-proxy-service.js";
import { proxiedDocumentsFactory } from "../../proxy/proxied-documents.js";

/**
 * The Maven 2 layout (docs/integration/maven.md): `maven-metadata.xml` and checksums are the
 * server's own, written from rows each deploy adds; files are downloaded through the file routes
 * and uploaded through its deploy (which records those rows); a walk's backfill and repair add
 * the rows of a file a crashed deploy left; a file that goes takes its rows with it.
 */
export const maven: FormatModule = {
  name: "maven",
  label: "maven (the Maven 2 layout)",
  migrations: mavenMigrations,
  create(deps) {
    const store = mavenStoreFactory(deps.db);
    const repository = mavenRepositoryFactory({ store, artifacts: deps.artifacts, metadata: deps.metadata, blobs: deps.blobs, readOnly: deps.readOnly });
    // A file of the layout is copied as a deploy lands it; what is kept as a plain file, as a PUT would.
    const deploy = artifactCopierFactory({ ...deps, artifacts: { publish: repository.deploy } });
    // Proxy repositories (docs/integration/maven.md, "Proxy repositories"): what they lack is fetched from their upstream.
    const p = deps.proxy;
    const proxy = p
      ? mavenProxyFactory({
          upstreams: p.upstreams,
          documents: proxiedDocumentsFactory({ pool: deps.pool, upstreams: p.upstreams, settings: p.settings, readOnly: deps.readOnly, log: deps.log }),
          store,
          deploy: repository.deploy,
          ...(p.screenVersions ? { screenVersions: p.screenVersions } : {}),
          ...(p.tooYoung ? { tooYoung: p.tooYoung } : {}),
          readOnly: deps.readOnly,
          log: deps.log,
        })
      : undefined;
    const isProxy = (name: string) => p?.upstreamOf(name) !== undefined;
    return {
      handle: mavenHandler({ maven: repository, metadata: deps.metadata, blobs: deps.blobs, ...(proxy ? { proxy: { maven: proxy, isProxy } } : {}) }),
      group: mavenGroupHandler({
        // A group member's maven-metadata.xml as it serves it: what the group merges.
        metadataOf: async (m, dir) => (m.type === "proxy" ? (await proxy?.metadata(m.name, dir))?.body : repository.metadataAt(m.name, dir)),
      }),
      proxies: proxy !== undefined,
      ...(proxy ? { imports: { spec: mavenSpec, paths: proxy.importPaths } } : {}),
      beforeRead: async (a, opts) => {
        if (!proxy || !isProxy(a.repository)) return undefined;
        const f = parseMavenPath(a.segments);
        return proxy.file(a.repository, a.path, f.kind === "file" ? f : undefined, opts);
      },
      routes: (app) => mavenOptionsRoutes(app, { maven: repository, formatOf: deps.formatOf }),
      publish: repository.deploy,
      removing: mavenFileRemoval({ store, metadata: deps.metadata }),
      indexing: mavenFileIndexing({ store }),
      export: mavenExportFactory({ metadata: deps.metadata, deploy, copy: artifactCopierFactory(deps) }),
      ecosystem: "Maven",
      coordinates: mavenCoordinates,
    };
  },
};
