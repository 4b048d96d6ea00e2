import { WALK_BATCH_MAX } from "@svc/contracts";
import { addCounts, type Job, type JobContext } from "../job-types.js";

/**
 * How long a staged leftover (an upload nobody committed or discarded) must be untouched
 * before reclaim removes it. An upload writes continuously until it is committed (one that
 * stops arriving is cut after svc.upload-idle-timeout), so an hour-old one was abandoned.
 */
export const STALE_STAGED_MS = 3_600_000;

/**
 * Reclaims space that nothing refers to: staged leftovers (a crash, a cut upload) untouched
 * for an hour, an object store's multipart uploads begun over an hour ago and never completed, and blobs no index row references any more, once untouched for
 * svc.storage.reclaim-grace. The walker only lists the blobs; the artifacts service removes
 * each under its digest's lock, the one a publish's commit takes, and only when no row
 * references it and it is older than the grace: a publish in progress (its blob committed,
 * its row about to be) never loses its content, and content published again meanwhile is
 * touched by the commit and so young again.
 *
 * `bytes` counts everything freed; `blobs` and `blobBytes` the unreferenced blobs' share,
 * `tempFiles` the staged leftovers removed, `uploads` the multipart uploads an object store held
 * for uploads nobody completed (begun over an hour before), aborted.
 *
 * After each repository's last index row, its format's garbage collection (`collect` step
 * `gc`): in an OCI repository, the blobs no manifest references (docs/integration/oci.md),
 * counted as `collected` and `collectedBytes` (also in `bytes`).
 */
export function reclaimJob(ctx: JobContext): Job {
  const counts = { tempFiles: 0, uploads: 0, blobs: 0, blobBytes: 0, bytes: 0 };
  const age = (modified: Date) => ctx.now.getTime() - modified.getTime();
  return {
    name: "reclaim",
    counts,
    async staged(s) {
      if (age(s.modified) < STALE_STAGED_MS) return;
      const freed = await ctx.actions.deleteStaged(s.name, STALE_STAGED_MS);
      if (freed !== undefined) {
        counts.tempFiles++;
        counts.bytes += freed;
      }
    },
    async abandonedUpload(u) {
      // Listed as begun before the bound; what is aborted frees the parts it held.
      if (age(u.initiated) < STALE_STAGED_MS) return;
      if (await ctx.actions.abortUpload(u)) counts.uploads++;
    },
    async leaveFolder(repository, folder) {
      if (folder !== "") return;
      const r = (await ctx.actions.collect(repository, "gc", ctx.reclaimGraceMs)).counts;
      addCounts(counts, r);
      counts.bytes += r.collectedBytes ?? 0;
    },
    async blobPage(page) {
      // Only those old enough to be asked about; the artifacts service checks the age again under the lock.
      const digests = page.filter((b) => age(b.modified) >= ctx.reclaimGraceMs).map((b) => b.sha256);
      for (let i = 0; i < digests.length; i += WALK_BATCH_MAX) {
        const r = await ctx.actions.reclaimBlobs({ digests: digests.slice(i, i + WALK_BATCH_MAX), olderThanMs: ctx.reclaimGraceMs });
        for (const b of r.removed) {
          counts.blobs++;
          counts.blobBytes += b.size;
          counts.bytes += b.size;
        }
      }
    },
  };
}
