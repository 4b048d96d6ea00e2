import { ServiceError } from "@svc/contracts";
import { EXPORT_PAGE, copyPages, type ArtifactCopier } from "../../domain/export-steps.js";
import type { FormatExport } from "../../domain/repository-export.js";
import type { MetadataStore } from "../../store/metadata-store.js";

/**
 * A Go repository: every version's zip, uploaded into the target as a client's upload would be
 * (`copy` publishes through the registry: the zip checked, its version row written, so the
 * target lists it and serves its `.mod` and `.info`). A version the target published with other
 * content, even one removed since, is refused by name, never changed.
 */
export function goExportFactory(deps: { metadata: Pick<MetadataStore, "page">; copy: ArtifactCopier }): FormatExport {
  const copy: ArtifactCopier = async (job, row) => {
    try {
      return await deps.copy(job, row);
    } catch (err) {
      if (err instanceof ServiceError && err.code === "conflict") return { kind: "refused", reason: err.message };
      throw err;
    }
  };
  return {
    copy: (job) => copyPages(job, (after) => deps.metadata.page(job.source, after, EXPORT_PAGE), { keyOf: (r) => r.path, pathOf: (r) => r.path, copy: (r) => copy(job, r) }),
  };
}
