import { ServiceError } from "@svc/contracts";
import type { BlobStore } from "@svc/blobs";
import type { ArtifactRecord, MetadataStore } from "../store/metadata-store.js";
import type { ArtifactService } from "./artifact-service.js";
import type { ExportJob, FormatExport } from "./repository-export.js";

export type CopyOutcome = { kind: "copied" } | { kind: "skipped" } | { kind: "refused"; reason: string };

export interface ArtifactCopierDeps {
  metadata: Pick<MetadataStore, "find">;
  blobs: Pick<BlobStore, "get">;
  artifacts: Pick<ArtifactService, "publish">;
}

const addressOf = (repository: string, path: string) => ({ repository, segments: path.split("/"), path });

/** Why a file is not exported: the index names content the store does not have. */
export const MISSING = (source: string) => `the file is missing from ${source}'s store (a walk's repair job reconciles the index)`;

/** Why an existing target file is not overwritten: an export adds, it never replaces. */
const different = (sha256: string) => `the target holds different content at this path (sha256 ${sha256}): not overwritten`;

/**
 * Copies one artifact, as a client's PUT would store it (artifacts.publish: read-only mode,
 * the digest check, the per-path lock, the `artifact.published` event with the target's
 * coordinates). Skipped when the target holds the same content at that path; refused when it
 * holds other content (never overwritten), when the source's file is held, or missing. Format
 * steps build on it for their files.
 */
export function artifactCopierFactory(deps: ArtifactCopierDeps) {
  const classify = async (target: string, path: string, sha256: string): Promise<CopyOutcome | undefined> => {
    const there = await deps.metadata.find(target, path);
    if (!there) return undefined;
    return there.sha256 === sha256 ? { kind: "skipped" } : { kind: "refused", reason: different(there.sha256) };
  };

  return async (job: Pick<ExportJob, "source" | "target" | "actor">, row: ArtifactRecord): Promise<CopyOutcome> => {
    const { path } = row;
    if (row.heldReason !== null) return { kind: "refused", reason: `held in ${job.source} (${row.heldReason}): a held file is not exported` };
    const known = await classify(job.target, path, row.sha256);
    if (known) return known;
    const source = await deps.blobs.get(row.sha256);
    if (!source) return { kind: "refused", reason: MISSING(job.source) };
    try {
      await deps.artifacts.publish(addressOf(job.target, path), source, row.contentType, job.actor, {
        // The index's digest of the source: a file changed or damaged since is refused, not copied.
        digests: { sha256: [{ hex: row.sha256, header: `the SHA-256 ${job.source} records for it` }] },
        // Another writer landing first is not overwritten either (checked under the path's lock).
        preconditions: { ifNoneMatch: "*" },
      });
      return { kind: "copied" };
    } catch (err) {
      if (err instanceof ServiceError && err.code === "precondition_failed") return (await classify(job.target, path, row.sha256)) ?? { kind: "refused", reason: "the target changed at this path during the export" };
      if (err instanceof ServiceError && err.code === "invalid_input") return { kind: "refused", reason: err.message };
      throw err;
    } finally {
      source.destroy();
    }
  };
}
export type ArtifactCopier = ReturnType<typeof artifactCopierFactory>;

/** Source artifacts read per metadata page. */
export const EXPORT_PAGE = 200;

/**
 * Copies a repository page by page (`page(after)`, EXPORT_PAGE items at a time, `keyOf` the
 * paging key of an item), tallying each item under its path; returns at the next item once the
 * export is aborted.
 */
export async function copyPages<T>(job: ExportJob, page: (after: string | undefined) => Promise<T[]>, item: { keyOf: (t: T) => string; pathOf: (t: T) => string; copy: (t: T) => Promise<CopyOutcome> }): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const rows = await page(after);
    for (const row of rows) {
      if (job.signal.aborted) return;
      if (job.selects && !job.selects(item.pathOf(row))) continue;
      const out = await item.copy(row);
      if (out.kind === "refused") job.tally.refused(item.pathOf(row), out.reason);
      else job.tally[out.kind](item.pathOf(row));
    }
    if (rows.length < EXPORT_PAGE) return;
    after = item.keyOf(rows[rows.length - 1]!);
  }
}
