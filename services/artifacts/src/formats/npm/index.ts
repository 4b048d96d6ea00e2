import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { npmCoordinates } from "./npm-documents.js";
import { npmExportFactory } from "./npm-export.js";
import { npmRegistryFactory, npmTarballHolding, npmTarballRemoval } from "./npm-registry.js";
import { npmHandler } from "./npm-routes.js";
import { npmMigrations } from "./npm-migrations.js";
import { npmStoreFactory } from "./npm-store.js";
import { packageAt } from "./npm-documents.js";
import { npmProxyFactory } from "./npm-proxy-service.js";

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
    // Proxy repositories (docs/integration/npm.md, "Proxy repositories"): what they lack is fetched from their upstream.
    const p = deps.proxy;
    const proxy = p ? npmProxyFactory({ pool: deps.pool, upstreams: p.upstreams, settings: p.settings, ...(p.screenVersions ? { screenVersions: p.screenVersions } : {}), ...(p.tooYoung ? { tooYoung: p.tooYoung } : {}), readOnly: deps.readOnly, log: deps.log }) : undefined;
    const isProxy = (repository: string) => p?.upstreamOf(repository) !== undefined;
    return {
      handle: npmHandler({
        npm: registry,
        store,
        artifacts: deps.artifacts,
        publicUrl: deps.publicUrl,
        held: async (repository, path) => ((await deps.metadata.find(repository, path))?.heldReason ?? null) !== null,
        ...(proxy ? { proxy: { npm: proxy, isProxy } } : {}),
      }),
      proxies: proxy !== undefined,
      beforeRead: async (a) => {
        if (!proxy || !isProxy(a.repository)) return;
        const at = packageAt(a.segments);
        if (at && at.rest.length === 2 && at.rest[0] === "-") await proxy.tarball(a.repository, at.name, a.path);
      },
      removing: npmTarballRemoval(store),
      holding: npmTarballHolding(store),
      export: npmExportFactory({ store, metadata: deps.metadata, copy: artifactCopierFactory(deps) }),
      ecosystem: "npm",
      coordinates: npmCoordinates,
    };
  },
};
