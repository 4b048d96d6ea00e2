import type { Job, JobContext, JobName } from "../job-types.js";
import { backfillJob } from "./backfill.js";
import { reclaimJob } from "./reclaim.js";
import { repairJob } from "./repair.js";
import { retentionJob } from "./retention.js";

const FACTORIES: Record<JobName, (ctx: JobContext) => Job> = {
  retention: retentionJob,
  reclaim: reclaimJob,
  repair: repairJob,
  backfill: backfillJob,
};

export function makeJobs(names: readonly JobName[], ctx: JobContext): Job[] {
  return names.map((n) => FACTORIES[n](ctx));
}
