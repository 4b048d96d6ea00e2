import { EXPORT_PAGE, copyPages, type ArtifactCopier } from "../../domain/export-steps.js";
import type { FormatExport } from "../../domain/repository-export.js";
import type { MetadataStore } from "../../store/metadata-store.js";

/** A raw repository: every file, path for path. */
export function rawExportFactory(deps: { metadata: Pick<MetadataStore, "page">; copy: ArtifactCopier }): FormatExport {
  return {
    copy: (job) => copyPages(job, (after) => deps.metadata.page(job.source, after, EXPORT_PAGE), { keyOf: (r) => r.path, pathOf: (r) => r.path, copy: (r) => deps.copy(job, r) }),
  };
}
