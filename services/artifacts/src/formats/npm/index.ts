import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { npmCoordinates } from "./npm-documents.js";
import { npmExportFactory } from "./npm-export.js";
import { npmRegistryFactory, npmTarballHolding, npmTarballRemoval } from "./npm-registry.js";
import { npmHandler } from "./npm-routes.js";
import { npmMigrations } from "./npm-migrations.js";
import { npmStoreFactory } from "./npm-store.js";
import { invalid, notFound } from "@svc/contracts";
import { packageAt, tarballPath } from "./npm-documents.js";
import { npmProxyFactory } from "./npm-proxy-service.js";
import { npmDocumentCacheFactory } from "./npm-document-cache.js";
import { npmGroupHandler } from "./npm-group.js";
import { npmDescribe } from "./npm-describe.js";

/**
 * The npm registry protocol (docs/integration/npm.md): package documents, publishes,
 * unpublishes and dist-tags are its own; tarball downloads are files. A tarball removed as a
 * file (retention, repair, a forced repository removal) unpublishes its version.
 */
/** An import's npm item: "name" (every version the upstream lists) or "name@version"; scoped names as npm writes them. */
function npmSpec(spec: string): { name: string; version?: string } {
  const at = spec.indexOf("@", 1);
  const name = at > 0 ? spec.slice(0, at) : spec;
  const version = at > 0 ? spec.slice(at + 1) : undefined;
  if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(name) || version === "") throw invalid("packages", `${spec} is not an npm package name, or name@version`);
  return version === undefined ? { name } : { name, version };
}

export const npm: FormatModule = {
  name: "npm",
  label: "npm",
  migrations: npmMigrations,
  create(deps) {
    const store = npmStoreFactory(deps.db, deps.pool, deps.metadata.changes);
    const registry = npmRegistryFactory({ store, metadata: deps.metadata, artifacts: deps.artifacts, readOnly: deps.readOnly });
    // Proxy repositories (docs/integration/npm.md, "Proxy repositories"): what they lack is fetched from their upstream.
    const p = deps.proxy;
    const proxy = p ? npmProxyFactory({ pool: deps.pool, isProxy: (repository) => p.upstreamOf(repository) !== undefined, upstreams: p.upstreams, settings: p.settings, ...(p.screenVersions ? { screenVersions: p.screenVersions } : {}), ...(p.tooYoung ? { tooYoung: p.tooYoung } : {}), readOnly: deps.readOnly, log: deps.log }) : undefined;
    const isProxy = (repository: string) => p?.upstreamOf(repository) !== undefined;
    // Hosted repositories' documents, serialised once per change: served by them and merged by their groups.
    const documents = npmDocumentCacheFactory({ store });
    return {
      handle: npmHandler({
        npm: registry,
        store,
        documents,
        artifacts: deps.artifacts,
        publicUrl: deps.publicUrl,
        held: async (repository, path) => ((await deps.metadata.find(repository, path))?.heldReason ?? null) !== null,
        ...(proxy ? { proxy: { npm: proxy, isProxy } } : {}),
        ...(deps.audit ? { audit: deps.audit } : {}),
      }),
      group: npmGroupHandler({ documents, ...(proxy ? { proxy } : {}), publicUrl: deps.publicUrl }),
      proxies: proxy !== undefined,
      beforeRead: async (a, opts) => {
        if (!proxy || !isProxy(a.repository)) return undefined;
        const at = packageAt(a.segments);
        return at && at.rest.length === 2 && at.rest[0] === "-" ? proxy.tarball(a.repository, at.name, a.path, opts) : undefined;
      },
      ...(proxy
        ? {
            imports: {
              spec: npmSpec,
              async paths(repository: string, spec: string) {
                const { name, version } = npmSpec(spec);
                const p = await proxy.packument(repository, name);
                if (!p) throw notFound(`the upstream of ${repository} has no package ${name}`);
                const versions = Object.keys(p.doc.versions ?? {});
                if (version !== undefined && !versions.includes(version)) throw notFound(`the upstream of ${repository} has no ${name}@${version}`);
                return (version !== undefined ? [version] : versions).map((v) => tarballPath(name, v));
              },
            },
          }
        : {}),
      removing: npmTarballRemoval(store),
      holding: npmTarballHolding(store),
      export: npmExportFactory({ store, metadata: deps.metadata, copy: artifactCopierFactory(deps), ...(proxy ? { proxied: proxy.packages } : {}) }),
      ecosystem: "npm",
      coordinates: npmCoordinates,
      describe: npmDescribe(store),
    };
  },
};
