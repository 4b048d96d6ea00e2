import type { FormatModule } from "../format.js";
import { pypiExportFactory } from "./pypi-export.js";
import { pypiCoordinates } from "./pypi-index.js";
import { pypiRegistryFactory } from "./pypi-registry.js";
import { pypiAdminRoutes, pypiHandler } from "./pypi-routes.js";
import { pypiGroupHandler } from "./pypi-group.js";
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
    return {
      handle: pypiHandler({ registry, store }),
      group: pypiGroupHandler({
        registry,
        // What a group merges of each member: a hosted member's own index rows. A proxy member's
        // pages come from its proxy once PyPI proxies are served (their shown files plug in here).
        projectFiles: async (m, project) => {
          if (m.type === "proxy") return undefined;
          const files = await store.files(m.name, project);
          return files.length > 0 ? files : undefined;
        },
        projects: async (m) => (m.type === "proxy" ? undefined : store.projects(m.name)),
      }),
      servesFolders: true,
      routes: (app) => pypiAdminRoutes(app, { registry, formatOf: deps.formatOf }),
      export: pypiExportFactory({ store, metadata: deps.metadata, blobs: deps.blobs, registry }),
      ecosystem: "PyPI",
      coordinates: pypiCoordinates,
    };
  },
};
