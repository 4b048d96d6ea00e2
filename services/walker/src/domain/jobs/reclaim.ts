import { parentOf, type Job, type JobContext } from "../job-types.js";

/**
 * How long an upload in tmp/, a blob nothing links to, or an empty folder must be untouched
 * before reclaim removes it. An upload writes continuously until it is renamed into place (one
 * that stops arriving is cut after svc.upload-idle-timeout), so an hour-old one was abandoned.
 *
 * A blob is never seen unlinked while in use: an upload between linking its blob and the
 * rename holds a second link in tmp/, and a publish reusing a blob links it (and touches it)
 * before anything else. The hour is margin over what a shared filesystem may show late: link
 * counts cached by an NFS client (seconds to a minute) and clocks of hosts that disagree.
 * Even a removal that loses that race costs no content, since unlinking the blob's name
 * leaves every other link to the inode whole: at worst a later upload stores a second copy.
 */
export const STALE_TEMP_MS = 3_600_000;

/**
 * Reclaims space that nothing refers to: abandoned uploads in tmp/, blobs no artifact links
 * to any more (left by a crash between linking a blob and renaming its upload into place, or
 * by a path removed outside the service) and folders left empty, each untouched for an hour.
 *
 * Files without metadata are never removed here: since a publish writes the file and its
 * metadata under one lock, such a file is a complete upload a crash interrupted after the
 * rename, content from before the index, or a restored backup. Deleting it would lose data
 * that backfill can index instead; it is counted as `unindexed`.
 *
 * `bytes` counts everything freed; `blobs` and `blobBytes` the orphaned blobs' share.
 */
export function reclaimJob(ctx: JobContext): Job {
  const counts = { tempFiles: 0, blobs: 0, blobBytes: 0, emptyFolders: 0, bytes: 0, unindexed: 0 };
  /** Folders whose emptied subfolders this walk removed, so a parent emptied by it goes too. */
  const removedChildren = new Map<string, number>();
  const stale = (mtimeMs: number) => ctx.now.getTime() - mtimeMs >= STALE_TEMP_MS;
  return {
    name: "reclaim",
    counts,
    async temp(t) {
      if (!stale(t.mtimeMs)) return;
      const freed = await ctx.actions.removeTemp(t.name, STALE_TEMP_MS);
      if (freed !== undefined) {
        counts.tempFiles++;
        counts.bytes += freed;
      }
    },
    async blob(b) {
      // One link is the blob's own name: no artifact path holds the content.
      if (b.nlink !== 1 || !stale(b.mtimeMs)) return;
      const freed = await ctx.actions.removeBlob(b.sha256, STALE_TEMP_MS);
      if (freed !== undefined) {
        counts.blobs++;
        counts.blobBytes += freed;
        counts.bytes += freed;
      }
    },
    async entry(e) {
      if (e.file && !e.meta) counts.unindexed++;
    },
    async leaveFolder(repository, folder, children) {
      const removed = removedChildren.get(folder) ?? 0;
      removedChildren.delete(folder);
      // Never the repository's own folder.
      if (folder === "" || children - removed > 0) return;
      if (await ctx.actions.removeEmptyFolder(repository, folder, STALE_TEMP_MS)) {
        counts.emptyFolders++;
        const parent = parentOf(folder);
        removedChildren.set(parent, (removedChildren.get(parent) ?? 0) + 1);
      }
    },
  };
}
