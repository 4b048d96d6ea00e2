import { ServiceError, invalid } from "@svc/contracts";
import { durationMs, parseIsoDuration } from "@svc/kit";
import type { FormatModule } from "../format.js";
import { ociMigrations } from "./oci-migrations.js";
import { ociCollector, releaseReferences } from "./oci-gc.js";
import { IMMUTABLE_TAGS, KEEP_TAGS, UNTAGGED_AFTER, ociOptionsRoutes } from "./oci-options-routes.js";
import { ociRoutes } from "./oci-routes.js";
import { ociStoreFactory } from "./oci-store.js";

/** `<name>/manifests/<digest>`: the image and the manifest an event is about; blobs are no package's. */
function ociCoordinates(path: string) {
  const at = path.lastIndexOf("/manifests/");
  if (at <= 0) return undefined;
  return { format: "oci", name: path.slice(0, at), version: path.slice(at + "/manifests/".length), file: path };
}

/**
 * A container registry (OCI distribution v1.1; docs/integration/oci.md), served at `/v2/` by its
 * own routes. Under `/repository/<name>/` its index rows read as files (`<image>/blobs/<digest>`,
 * `<image>/manifests/<digest>`); writes there are refused, since a manifest must be checked
 * and tagged as the registry API does it.
 */
export const oci: FormatModule = {
  name: "oci",
  label: "oci (container images, at /v2/)",
  migrations: ociMigrations,
  options: { immutableTags: IMMUTABLE_TAGS, keepTags: KEEP_TAGS, untaggedAfter: UNTAGGED_AFTER },
  create(deps) {
    const store = ociStoreFactory(deps.db);
    const collector = ociCollector({ db: deps.db, blobs: deps.blobs, artifacts: deps.artifacts, retention: (repository) => store.retention(repository) });
    return {
      handle: (req) => {
        if (req.method === "GET" || req.method === "HEAD") return undefined;
        throw new ServiceError("method_not_allowed", "an OCI repository is written through the registry API at /v2/<repository>/<image>/… (skopeo, podman, buildah, docker)");
      },
      routes: (app) => {
        ociRoutes(app, { store, artifacts: deps.artifacts, metadata: deps.metadata, blobs: deps.blobs, formatOf: deps.formatOf, ...(deps.redirect ? { redirect: deps.redirect } : {}) });
        ociOptionsRoutes(app, { store, formatOf: deps.formatOf });
      },
      coordinates: ociCoordinates,
      // The console's image view: its tags and the manifest each names (at most the first 200 in byte order).
      describe: async (repository, name) => {
        const tags = await store.tags(repository, name, undefined, 200);
        if (!tags) return undefined;
        const digests = await Promise.all(tags.map((tag) => store.tag(repository, name, tag)));
        return { tags: Object.fromEntries(tags.flatMap((tag, i) => (digests[i] ? [[tag, digests[i]]] : []))) };
      },
      collect: collector.collect,
      // A manifest going: what it referenced is released (garbage collection's grace counts from now).
      removing: async (tx, a) => {
        if (a.path.includes("/manifests/")) await releaseReferences(tx, a.repository, a.path);
      },
      options: {
        get: async (repository) => ({ immutableTags: await store.immutableTags(repository), ...(await store.retention(repository)) }),
        set: async (repository, values) => {
          const after = values.untaggedAfter;
          if (typeof after === "string") {
            const d = parseIsoDuration(after);
            if (!d || durationMs(d) <= 0) throw invalid("untaggedAfter", "untaggedAfter must be a positive ISO-8601 duration such as P14D or PT12H");
          }
          const keep = values.keepTags;
          await store.setRetention(repository, { keepTags: keep === undefined ? undefined : (keep as number | null), untaggedAfter: after === undefined ? undefined : (after as string | null) });
          if (typeof values.immutableTags === "boolean") await store.setImmutableTags(repository, values.immutableTags);
        },
      },
    };
  },
};
