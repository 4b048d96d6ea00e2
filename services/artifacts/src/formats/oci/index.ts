import { ServiceError } from "@svc/contracts";
import type { FormatModule } from "../format.js";
import { ociMigrations } from "./oci-migrations.js";
import { IMMUTABLE_TAGS, ociOptionsRoutes } from "./oci-options-routes.js";
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
  options: { immutableTags: IMMUTABLE_TAGS },
  create(deps) {
    const store = ociStoreFactory(deps.db);
    return {
      handle: (req) => {
        if (req.method === "GET" || req.method === "HEAD") return undefined;
        throw new ServiceError("method_not_allowed", "an OCI repository is written through the registry API at /v2/<repository>/<image>/… (skopeo, podman, buildah, docker)");
      },
      routes: (app) => {
        ociRoutes(app, { store, artifacts: deps.artifacts, metadata: deps.metadata, blobs: deps.blobs, formatOf: deps.formatOf });
        ociOptionsRoutes(app, { store, formatOf: deps.formatOf });
      },
      coordinates: ociCoordinates,
      options: {
        get: async (repository) => ({ immutableTags: await store.immutableTags(repository) }),
        set: async (repository, values) => {
          if (typeof values.immutableTags === "boolean") await store.setImmutableTags(repository, values.immutableTags);
        },
      },
    };
  },
};
