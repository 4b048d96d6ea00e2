import { statSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The order files start in: by sequence.groupOrder (unit, then e2e with its S3 pass), and within
 * a group longest first, whichever project a file belongs to, so the S3 pass's files share the
 * two workers with the e2e files instead of queueing behind them (vitest's own order runs a
 * group's projects one after the other, leaving one long file alone at the end of the run).
 * Longest is the last run's duration when vitest has one for every file, else the larger file.
 */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const root = this.ctx.config.root;
    const duration = (f: TestSpecification) => cache.getFileTestResults(`${f.project.name}:${relative(root, f.moduleId)}`)?.duration;
    // One measure for every file, so the order is consistent: durations when all have one.
    const durations = new Map(files.map((f) => [f, duration(f)]));
    const measure = [...durations.values()].every((d) => d !== undefined) ? (f: TestSpecification) => durations.get(f)! : (f: TestSpecification) => statSync(f.moduleId).size;
    return [...files].sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || measure(b) - measure(a));
  }
}
