import { ServiceError } from "@svc/contracts";
import type { BlobStore } from "@svc/blobs";
import type { MetadataStore } from "../../store/metadata-store.js";
import type { PypiFileRow, PypiStore } from "./pypi-store.js";
import type { CopyOutcome } from "../../domain/export-steps.js";
import { EXPORT_PAGE, MISSING, copyPages } from "../../domain/export-steps.js";
import type { PypiRegistry } from "./pypi-registry.js";
import type { ExportJob, FormatExport } from "../../domain/repository-export.js";

export interface PypiExportDeps {
  store: Pick<PypiStore, "pageFiles">;
  metadata: Pick<MetadataStore, "find">;
  blobs: Pick<BlobStore, "get">;
  registry: Pick<PypiRegistry, "upload">;
}

/**
 * A PyPI repository: every file, as twine's upload would land it (registry.upload: read-only
 * mode, the source's SHA-256 checked against the bytes read, one file per file name, the
 * `artifact.published` event with the PyPI coordinates), indexed with the source's
 * requires-python, yanked state and upload time. One item per file, named by its path. A file name the
 * target holds with the same SHA-256 is skipped (its yanked state is the target's own); with
 * other content it is refused, as PyPI refuses reusing a file name.
 */
export function pypiExportFactory(deps: PypiExportDeps): FormatExport {
  const file = async (job: ExportJob, f: PypiFileRow): Promise<CopyOutcome> => {
    const row = await deps.metadata.find(job.source, f.path);
    if (!row) return { kind: "refused", reason: `the file is missing from ${job.source}'s index` };
    if (row.heldReason !== null) return { kind: "refused", reason: `held in ${job.source} (${row.heldReason}): a held file is not exported` };
    const checked = {
      name: f.displayName,
      version: f.version,
      project: f.project,
      filename: f.filename,
      // The index's digest of the source: a file changed or damaged since is refused, not copied.
      digests: { sha256: [{ hex: row.sha256, header: `the SHA-256 ${job.source} records for it` }] },
      sha256: row.sha256,
      requiresPython: f.requiresPython,
      yanked: f.yanked,
      uploaded: f.uploaded,
    };
    const source = await deps.blobs.get(row.sha256);
    if (!source) return { kind: "refused", reason: MISSING(job.source) };
    try {
      const done = await deps.registry.upload(job.target, checked, source, job.actor);
      return { kind: done.created ? "copied" : "skipped" };
    } catch (err) {
      if (err instanceof ServiceError && err.code === "invalid_input") return { kind: "refused", reason: err.message };
      throw err;
    } finally {
      source.destroy();
    }
  };

  return {
    copy: (job) => copyPages(job, (after) => deps.store.pageFiles(job.source, after, EXPORT_PAGE), { keyOf: (f) => f.filename, pathOf: (f) => f.path, copy: (f) => file(job, f) }),
  };
}
