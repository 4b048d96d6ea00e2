import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { mavenExportFactory } from "./maven-export.js";
import { mavenCoordinates } from "./maven-layout.js";
import { mavenFileIndexing, mavenFileRemoval, mavenRepositoryFactory } from "./maven-repository.js";
import { mavenHandler, mavenOptionsRoutes } from "./maven-routes.js";
import { mavenMigrations } from "./maven-migrations.js";
import { mavenStoreFactory } from "./maven-store.js";

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
    return {
      handle: mavenHandler({ maven: repository, metadata: deps.metadata, blobs: deps.blobs }),
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
