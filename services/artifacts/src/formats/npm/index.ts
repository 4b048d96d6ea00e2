import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { npmCoordinates } from "./npm-documents.js";
import { npmExportFactory } from "./npm-export.js";
import { npmRegistryFactory, npmTarballHolding, npmTarballRemoval } from "./npm-registry.js";
import { npmHandler } from "./npm-routes.js";
import { npmMigrations } from "./npm-migrations.js";
import { npmStoreFactory } from "./npm-store.js";

/**
 * The npm registry protocol (docs/integration/npm.md): package documents, publishes,
 * unpublishes and dist-tags are its own; tarball downloads are files. A tarball removed as a
 * file (retention, repair, a forced repository removal) unpublishes its version.
 */
export const npm: FormatModule = {
  name: "npm",
  label: "npm",
  migrations: npmMigrations,
  create(deps) {
    const store = npmStoreFactory(deps.db, deps.pool, deps.metadata.changes);
    const registry = npmRegistryFactory({ store, metadata: deps.metadata, artifacts: deps.artifacts, readOnly: deps.readOnly });
    return {
      handle: npmHandler({ npm: registry, store, artifacts: deps.artifacts, publicUrl: deps.publicUrl, held: async (repository, path) => ((await deps.metadata.find(repository, path))?.heldReason ?? null) !== null }),
      removing: npmTarballRemoval(store),
      holding: npmTarballHolding(store),
      export: npmExportFactory({ store, metadata: deps.metadata, copy: artifactCopierFactory(deps) }),
      ecosystem: "npm",
      coordinates: npmCoordinates,
    };
  },
};
