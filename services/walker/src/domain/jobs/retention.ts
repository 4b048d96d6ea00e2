import { durationMs, parseIsoDuration } from "@svc/kit";
import { addCounts, parentOf, type Job, type JobContext, type MetaInfo, type RetentionPolicy } from "../job-types.js";

export interface Version {
  path: string;
  meta: MetaInfo;
}

const ms = (d: string | undefined): number | undefined => {
  if (d === undefined) return undefined;
  const parsed = parseIsoDuration(d);
  return parsed ? durationMs(parsed) : undefined;
};

/** Whether a policy applies to a path: everywhere, or at or under its folder. */
export const covers = (policy: RetentionPolicy, path: string): boolean =>
  !policy.path || path === policy.path || path.startsWith(`${policy.path}/`);

/**
 * The versions of one folder (one artifact, in a raw repository) that the policy removes.
 * Versions are ordered newest first by publish time (ties: the greater path first). A version
 * goes when it meets every age rule that is set and is not among the `keepVersions` newest;
 * held versions never go. Durations count fixed lengths (P1M = 30 days).
 */
export function selectForRemoval(versions: Version[], policy: RetentionPolicy, now: Date): Version[] {
  const maxAge = ms(policy.maxAge);
  const unusedFor = ms(policy.unusedFor);
  if (policy.keepVersions === undefined && maxAge === undefined && unusedFor === undefined) return [];
  const ordered = [...versions].sort((a, b) => Date.parse(b.meta.updated) - Date.parse(a.meta.updated) || (a.path < b.path ? 1 : a.path > b.path ? -1 : 0));
  const t = now.getTime();
  return ordered.filter((v, i) => {
    if (v.meta.held) return false;
    if (policy.keepVersions !== undefined && i < policy.keepVersions) return false;
    const published = Date.parse(v.meta.updated);
    if (maxAge !== undefined && !(published < t - maxAge)) return false;
    if (unusedFor !== undefined) {
      const lastUse = v.meta.lastDownloaded ? Date.parse(v.meta.lastDownloaded) : published;
      if (!(lastUse < t - unusedFor)) return false;
    }
    return true;
  });
}

/**
 * Applies each repository's retention policy to its index rows, a folder at a time (the
 * walk says when it has seen the last row at or under a folder). Removal goes through
 * the artifacts service, which removes a version only if it is still the one seen here and
 * publishes `artifact.removed` with reason "retention".
 */
export function retentionJob(ctx: JobContext): Job {
  const counts = { versions: 0, removed: 0, bytes: 0, kept: 0, skipped: 0 };
  let policy: RetentionPolicy | null = null;
  const folders = new Map<string, Version[]>();
  return {
    name: "retention",
    counts,
    beginRepository(repo) {
      policy = repo.retention;
      folders.clear();
    },
    async entry(e) {
      if (!policy || !covers(policy, e.path)) return;
      counts.versions++;
      const folder = parentOf(e.path);
      const list = folders.get(folder);
      if (list) list.push({ path: e.path, meta: e.meta });
      else folders.set(folder, [{ path: e.path, meta: e.meta }]);
    },
    async leaveFolder(repository, folder) {
      // After the repository's last row: its format's own retention (an OCI repository's tags and untagged manifests).
      if (folder === "") addCounts(counts, (await ctx.actions.collect(repository, "retention", ctx.reclaimGraceMs)).counts);
      const versions = folders.get(folder);
      if (!versions || !policy) return;
      folders.delete(folder);
      const doomed = selectForRemoval(versions, policy, ctx.now);
      counts.kept += versions.length - doomed.length;
      for (const v of doomed) {
        const r = await ctx.actions.removeForRetention({ repository, path: v.path, sha256: v.meta.sha256, updated: v.meta.updated });
        if (r.removed) {
          counts.removed++;
          counts.bytes += r.size ?? v.meta.size;
        } else {
          counts.skipped++;
        }
      }
    },
  };
}
