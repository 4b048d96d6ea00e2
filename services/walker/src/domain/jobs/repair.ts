import type { Job, JobContext } from "../job-types.js";

/**
 * Recomputes the size and SHA-256 of every indexed file and has the artifacts service
 * correct what differs (a write a crash cut short between rename and commit, content changed
 * outside the service); drops metadata whose file is gone. `fixed` and `forgotten` say what
 * it changed, `hashedBytes` what it read.
 */
export function repairJob(ctx: JobContext): Job {
  const counts = { checked: 0, fixed: 0, forgotten: 0, hashedBytes: 0 };
  return {
    name: "repair",
    counts,
    async entry(e) {
      if (!e.meta) return;
      if (!e.file) {
        const r = await ctx.actions.forget({ repository: e.repository, path: e.path });
        if (r.forgotten) counts.forgotten++;
        return;
      }
      const sha256 = await e.sha256();
      if (sha256 === undefined) return;
      counts.checked++;
      counts.hashedBytes += e.file.size;
      if (sha256 === e.meta.sha256 && e.file.size === e.meta.size) return;
      const r = await ctx.actions.index({ repository: e.repository, path: e.path, ...e.file, sha256 });
      if (r.outcome === "corrected" || r.outcome === "created") counts.fixed++;
    },
  };
}
