import { statSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The order files start in: by sequence.groupOrder (unit, then e2e with its S3 pass), and within
 * a group longest first, whichever project a file belongs to, so the S3 pass's files share the
 * two workers with the e2e files instead of queueing behind them (vitest's own order runs a
 * group's projects one after the other, leaving one long file alone at the end of the run).
 * Longest is the last run's duration when vitest has it for both files, else the larger file.
 */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const root = this.ctx.config.root;
    const duration = (f: TestSpecification) => cache.getFileTestResults(`${f.project.name}:${relative(root, f.moduleId)}`)?.duration;
    const size = (f: TestSpecification) => statSync(f.moduleId).size;
    return [...files].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0) return group;
      const [da, db] = [duration(a), duration(b)];
      if (da !== undefined && db !== undefined) return db - da;
      return size(b) - size(a);
    });
  }
}
