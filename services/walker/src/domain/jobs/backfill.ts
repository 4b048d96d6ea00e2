import type { Job, JobContext } from "../job-types.js";

/**
 * Indexes files the metadata does not know (content from before the index, a restored
 * backup, a publish a crash cut short after its rename): size, SHA-256, and the file's
 * modification time as its publish time.
 */
export function backfillJob(ctx: JobContext): Job {
  const counts = { filled: 0, bytes: 0 };
  return {
    name: "backfill",
    counts,
    async entry(e) {
      if (!e.file || e.meta) return;
      const sha256 = await e.sha256();
      if (sha256 === undefined) return;
      const r = await ctx.actions.index({ repository: e.repository, path: e.path, ...e.file, sha256 });
      if (r.outcome === "created" || r.outcome === "corrected") {
        counts.filled++;
        counts.bytes += e.file.size;
      }
    },
  };
}
