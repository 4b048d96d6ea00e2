import { Readable } from "node:stream";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import type { BlobInfo, BlobStore } from "@svc/blobs";
import type { JobName, MetaInfo, RepositoryInfo, WalkActions } from "./job-types.js";
import { makeJobs } from "./jobs/index.js";
import { localActionsFactory } from "./local-actions.js";
import { newProgress, walkStore } from "./store-walk.js";

// A collection on demand, so the heap is measured without the garbage a walk leaves behind.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const heapUsed = () => {
  gc();
  return getHeapStatistics().used_heap_size;
};

const REPOSITORIES = 3;
const ROWS_PER_REPOSITORY = 100_000;
const BLOBS = REPOSITORIES * ROWS_PER_REPOSITORY;
const MB = 1024 * 1024;
/** Every row, blob and page held at once would be well over 100 MB; a walk holds a page of each. */
const BOUND = 20 * MB;

const digestOf = (n: number) => n.toString(16).padStart(64, "0");
const NOW = Date.now();

describe("a walk's memory stays flat however large the store", () => {
  it(`walks ${REPOSITORIES * ROWS_PER_REPOSITORY} index rows and ${BLOBS} blobs with every job, the walker's heap growing by less than ${BOUND / MB} MB`, async () => {
    const samples: number[] = [];
    const sample = () => samples.push(heapUsed() - baseline);
    // The index as the artifacts service pages it: generated a page at a time, in byte order
    // (zero-padded numbers), a hundred versions a folder.
    const metadata = async function* (repository: string): AsyncGenerator<MetaInfo[]> {
      const r = Number(repository.slice(1));
      for (let start = 0; start < ROWS_PER_REPOSITORY; start += 1000) {
        const page: MetaInfo[] = [];
        for (let i = start; i < start + 1000; i++) {
          const n = r * ROWS_PER_REPOSITORY + i;
          const path = `com/acme/g${String(Math.floor(i / 100)).padStart(5, "0")}/v${String(i).padStart(6, "0")}.jar`;
          page.push({ path, size: 1024, sha256: digestOf(n), updated: new Date(NOW - i * 1000).toISOString(), lastDownloaded: null, held: false });
        }
        yield page;
        if (start % 50_000 === 0) sample();
      }
    };
    // A listing of as many blobs, each of them generated when listed.
    const content = Buffer.alloc(64, 1);
    const blobs: Pick<BlobStore, "list" | "listStaged" | "head" | "get" | "deleteStaged"> = {
      async list({ after, limit }) {
        const from = after === undefined ? 0 : parseInt(after, 16) + 1;
        const page: BlobInfo[] = [];
        for (let n = from; n < Math.min(BLOBS, from + limit); n++) page.push({ sha256: digestOf(n), size: 1024, modified: new Date(NOW - 86_400_000) });
        if (from % 50_000 === 0) sample();
        return page;
      },
      listStaged: async () => [],
      head: async (sha256) => ({ sha256, size: 1024, modified: new Date(NOW - 86_400_000) }),
      get: async () => Readable.from([content]),
      deleteStaged: async () => undefined,
    };
    const calls = { reclaim: 0, verify: 0, backfill: 0, forget: 0, remove: 0 };
    const actions: WalkActions = {
      removeForRetention: async () => (calls.remove++, { removed: false, why: "changed" }),
      forget: async () => (calls.forget++, { forgotten: true }),
      reclaimBlobs: async () => (calls.reclaim++, { removed: [] }),
      verifyBlob: async () => (calls.verify++, { outcome: "intact", forgottenCount: 0 }),
      backfill: async () => (calls.backfill++, { filled: 0 }),
      collect: async () => ({ counts: {} }),
      deleteStaged: async () => undefined,
      abortUpload: async () => false,
    };
    const names: JobName[] = ["retention", "reclaim", "repair", "backfill"];
    const jobs = makeJobs(names, { actions, blobs: localActionsFactory(blobs), now: new Date(NOW), reclaimGraceMs: 3_600_000 });
    const repositories: RepositoryInfo[] = Array.from({ length: REPOSITORIES }, (_, r) => ({ name: `r${r}`, format: "raw", retention: { keepVersions: 10 } }));
    const progress = newProgress();

    const baseline = heapUsed();
    const outcome = await walkStore({ blobs, repositories, metadata, jobs, progress, shouldStop: () => false });
    sample();

    expect(outcome).toBe("complete");
    // It did see and do everything: every row, every blob, each job's calls a page at a time.
    expect(progress).toMatchObject({ entries: REPOSITORIES * ROWS_PER_REPOSITORY, blobs: BLOBS, bytes: REPOSITORIES * ROWS_PER_REPOSITORY * 1024, problems: { count: 0 } });
    expect(jobs.find((j) => j.name === "retention")!.counts).toMatchObject({ versions: REPOSITORIES * ROWS_PER_REPOSITORY, skipped: REPOSITORIES * ROWS_PER_REPOSITORY * 0.9 });
    expect(jobs.find((j) => j.name === "repair")!.counts).toMatchObject({ checked: BLOBS, missing: 0 });
    expect(calls).toMatchObject({ reclaim: BLOBS / 1000, backfill: (REPOSITORIES * ROWS_PER_REPOSITORY) / 1000, verify: BLOBS, forget: 0 });
    expect(samples.length).toBeGreaterThan(10);
    expect(Math.max(...samples), `heap growth samples (MB): ${samples.map((s) => (s / MB).toFixed(1)).join(" ")}`).toBeLessThan(BOUND);
  }, 300_000);
});
