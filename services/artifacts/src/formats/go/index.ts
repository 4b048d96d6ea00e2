import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { goExportFactory } from "./go-export.js";
import { goCoordinates } from "./go-module.js";
import { goGroupHandler } from "./go-group.js";
import { goRegistryFactory } from "./go-registry.js";
import { goHandler } from "./go-routes.js";
import { goMigration, goStoreFactory } from "./go-store.js";

/**
 * Go modules (docs/integration/go.md): the GOPROXY protocol, read by the go command, served from
 * module versions uploaded as zips (`PUT <module>/@v/<version>.zip`: the go command has no
 * publish command). A version's zip is its artifact (its event, the screening gate under OSV's
 * `Go`); its `.mod` and `.info` come from its row (go-store.ts), which outlives a removal so a
 * version never changes content. A walk's backfill writes the row of a zip that lacks one; an
 * export uploads each zip into the target as a client would.
 */
export const go: FormatModule = {
  name: "go",
  label: "go (Go modules, a GOPROXY)",
  migrations: { "0020_go_versions": goMigration },
  create(deps) {
    const store = goStoreFactory(deps.db);
    const registry = goRegistryFactory({ store, artifacts: deps.artifacts, metadata: deps.metadata, blobs: deps.blobs, readOnly: deps.readOnly });
    return {
      handle: goHandler({ registry }),
      group: goGroupHandler({ registry }),
      publish: registry.publish,
      removing: (tx, a) => store.markRemoved(tx, a.repository, a.path),
      // A walk's backfill: the version row of a zip the index holds without one.
      indexing: registry.indexing,
      // An export uploads each zip into the target through the registry, its version row with it.
      export: goExportFactory({ metadata: deps.metadata, copy: artifactCopierFactory({ ...deps, artifacts: { publish: registry.publish } }) }),
      ecosystem: "Go",
      coordinates: goCoordinates,
    };
  },
};
