import { parentOf, type Job, type JobContext } from "../job-types.js";

/** An upload untouched this long was abandoned: uploads write continuously until renamed. */
export const STALE_TEMP_MS = 3_600_000;

/**
 * Reclaims space that nothing refers to: abandoned uploads in tmp/ (untouched for an hour)
 * and folders left empty (for an hour, so a publish creating one is never raced).
 *
 * Files without metadata are never removed here: since a publish writes the file and its
 * metadata under one lock, such a file is a complete upload a crash interrupted after the
 * rename, content from before the index, or a restored backup. Deleting it would lose data
 * that backfill can index instead; it is counted as `unindexed`.
 */
export function reclaimJob(ctx: JobContext): Job {
  const counts = { tempFiles: 0, emptyFolders: 0, bytes: 0, unindexed: 0 };
  /** Folders whose emptied subfolders this walk removed, so a parent emptied by it goes too. */
  const removedChildren = new Map<string, number>();
  return {
    name: "reclaim",
    counts,
    async temp(t) {
      if (ctx.now.getTime() - t.mtimeMs < STALE_TEMP_MS) return;
      const freed = await ctx.actions.removeTemp(t.name, STALE_TEMP_MS);
      if (freed !== undefined) {
        counts.tempFiles++;
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
