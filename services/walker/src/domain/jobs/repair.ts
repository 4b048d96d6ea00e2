import type { Job, JobContext } from "../job-types.js";

/**
 * Checks that the store holds what the index says: every blob is read once and hashed
 * (streamed), and one whose bytes do not match its digest is sent to the artifacts service,
 * which reads it again and, when it is indeed corrupt, removes it and forgets every path that
 * held it (`corrupt`, and those paths in `forgotten`), so no client is served bytes that are
 * not what was published. Every index row whose blob is missing (deleted behind the server's
 * back, a backup restored without its blobs) is `missing`, and its row is dropped
 * (`forgotten`): the path answers 404 rather than failing. `checked` and `hashedBytes` say
 * what it read.
 */
export function repairJob(ctx: JobContext): Job {
  const counts = { checked: 0, hashedBytes: 0, corrupt: 0, missing: 0, forgotten: 0 };
  return {
    name: "repair",
    counts,
    async blob(b) {
      const actual = await ctx.blobs.digestOf(b.sha256);
      // Removed meanwhile (reclaimed, or a corrupt blob another walk dropped): nothing to check.
      if (actual === undefined) return;
      counts.checked++;
      counts.hashedBytes += b.size;
      if (actual === b.sha256) return;
      const r = await ctx.actions.verifyBlob({ sha256: b.sha256 });
      if (r.outcome === "corrupt") {
        counts.corrupt++;
        counts.forgotten += r.forgottenCount;
      }
    },
    async entry(e) {
      if (await e.blob()) return;
      counts.missing++;
      const r = await ctx.actions.forget({ repository: e.repository, path: e.path });
      if (r.forgotten) counts.forgotten++;
    },
  };
}
