import type { FormatModule } from "../format.js";
import { cargoCoordinates } from "./cargo-index.js";
import { cargoRegistryFactory } from "./cargo-registry.js";
import { cargoHandler } from "./cargo-routes.js";
import { cargoMigration, cargoStoreFactory } from "./cargo-store.js";

/**
 * A Cargo sparse registry (docs/integration/cargo.md): config.json, the index files and the
 * web API (publish, yank, owners, search) are its own; .crate files are downloaded through the
 * file routes. A version's index row follows its file's row by a cascade in the database
 * (cargo-store.ts), so it needs no `removing`.
 */
export const cargo: FormatModule = {
  name: "cargo",
  label: "cargo (a sparse registry)",
  migrations: { "0021_cargo_crates": cargoMigration },
  create(deps) {
    const store = cargoStoreFactory(deps.db);
    const registry = cargoRegistryFactory({ store, artifacts: deps.artifacts, readOnly: deps.readOnly });
    return {
      handle: cargoHandler({ registry, store, publicUrl: deps.publicUrl, anonymousRead: deps.anonymousRead ?? (() => false) }),
      ecosystem: "crates.io",
      coordinates: cargoCoordinates,
    };
  },
};
