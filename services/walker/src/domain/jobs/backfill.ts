import type { Job, JobContext } from "../job-types.js";

/**
 * Has each repository's format rebuild the index rows of its own it derives from a path
 * (a Maven file's version rows, an npm package's versions, …) where they are missing: a
 * page of paths at a time, to the artifacts service, which knows the repository's format.
 * `filled` counts the paths it did something for.
 */
export function backfillJob(ctx: JobContext): Job {
  const counts = { filled: 0 };
  return {
    name: "backfill",
    counts,
    async page(repository, entries) {
      const r = await ctx.actions.backfill(
        repository,
        entries.map((e) => e.path),
      );
      counts.filled += r.filled;
    },
  };
}
