import type { FormatModule } from "../format.js";
import { pypiExportFactory } from "./pypi-export.js";
import { isProjectName, normalizeProject, pypiCoordinates } from "./pypi-index.js";
import { pypiRegistryFactory } from "./pypi-registry.js";
import { pypiAdminRoutes, pypiHandler } from "./pypi-routes.js";
import { pypiGroupHandler } from "./pypi-group.js";
import { proxiedDocumentsFactory } from "../../proxy/proxied-documents.js";
import { pypiProxyFactory } from "./pypi-proxy-service.js";
import { pypiSpec } from "./pypi-proxy.js";
import { pypiFilesFollowArtifacts, pypiMigration, pypiStoreFactory } from "./pypi-store.js";

/**
 * A Python package index (docs/integration/pypi.md): twine's upload form to the repository's
 * URL, the simple index (folder URLs, hence `servesFolders`) and yanking (an admin route) are its
 * own; files under `packages/` are downloaded through the file routes. Its index rows follow
 * their files' rows by a cascade in the database (pypi-store.ts), so it needs no `removing`.
 */
export const pypi: FormatModule = {
  name: "pypi",
  label: "pypi (a package index)",
  migrations: { "0006_pypi_files": pypiMigration, "0007_pypi_files_follow_artifacts": pypiFilesFollowArtifacts },
  create(deps) {
    const store = pypiStoreFactory(deps.db);
    const registry = pypiRegistryFactory({ store, artifacts: deps.artifacts, readOnly: deps.readOnly });
    // Proxy repositories (docs/integration/pypi.md, "Proxy repositories"): what they lack is fetched from their upstream.
    const p = deps.proxy;
    const isProxy = (repository: string) => p?.upstreamOf(repository) !== undefined;
    const proxy = p
      ? pypiProxyFactory({
          pool: deps.pool,
          upstreams: p.upstreams,
          documents: proxiedDocumentsFactory({ pool: deps.pool, upstreams: p.upstreams, settings: p.settings, readOnly: deps.readOnly, log: deps.log }),
          store,
          artifacts: deps.artifacts,
          ...(p.screenVersions ? { screenVersions: p.screenVersions } : {}),
          ...(p.tooYoung ? { tooYoung: p.tooYoung } : {}),
          log: deps.log,
        })
      : undefined;
    return {
      handle: pypiHandler({ registry, store, ...(proxy ? { proxy: { pypi: proxy, isProxy } } : {}) }),
      group: pypiGroupHandler({
        registry,
        // What a group merges of each member: a hosted member's own index rows, a proxy member's
        // page as its proxy serves it (fetched or revalidated if need be).
        projectFiles: async (m, project) => {
          const files = m.type === "proxy" ? await proxy?.files(m.name, project) : await store.files(m.name, project);
          return files?.length ? files : undefined;
        },
        projects: async (m) => (m.type === "proxy" ? proxy?.projects(m.name) : store.projects(m.name)),
      }),
      servesFolders: true,
      proxies: proxy !== undefined,
      beforeRead: async (a, opts) => {
        const [first, project, version, filename] = a.segments;
        if (!proxy || !isProxy(a.repository) || first !== "packages" || a.segments.length !== 4 || a.folder) return undefined;
        // Files are fetched under the paths the pages link to only: the normalised project's.
        if (!isProjectName(project!) || normalizeProject(project!) !== project) return undefined;
        return proxy.file(a.repository, project!, version!, filename!, a.path, opts);
      },
      ...(proxy ? { imports: { spec: pypiSpec, paths: (repository: string, spec: string) => proxy.paths(repository, spec) } } : {}),
      routes: (app) => pypiAdminRoutes(app, { registry, formatOf: deps.formatOf, isProxy }),
      export: pypiExportFactory({ store, metadata: deps.metadata, blobs: deps.blobs, registry }),
      ecosystem: "PyPI",
      coordinates: pypiCoordinates,
    };
  },
};
