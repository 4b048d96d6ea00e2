import pino from "pino";
import { Registry } from "prom-client";
import { beforeEach, describe, expect, it } from "vitest";
import { REFERENCE_RE } from "@svc/contracts";
import type { RunRecord } from "../store/walk-store.js";
import type { MetaInfo, WalkActions } from "./job-types.js";
import { memoryBlobStore } from "./test-blob-store.js";
import { walkMetricsFactory } from "./walk-metrics.js";
import { describeBusy, walkRunnerFactory, type WalkRunnerDeps } from "./walk-runner.js";

const row = (path: string): MetaInfo => ({ path, size: 1, sha256: "a".repeat(64), updated: "2026-01-01T00:00:00.000Z", lastDownloaded: null, held: false });

function setup(o: { leaseFree?: boolean; readOnly?: boolean; repositories?: () => Promise<never[]>; elsewhere?: RunRecord[] } = {}) {
  const blobs = memoryBlobStore();
  /** The index of the repository "libs". */
  const index: MetaInfo[] = [];
  const lines: { msg: string; reference?: string }[] = [];
  const log = pino({ level: "info" }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  const records = new Map<string, RunRecord>();
  let released = 0;
  const leasesTaken: string[] = [];
  let repositoryReads = 0;
  const actions: Omit<WalkActions, "deleteStaged" | "abortUpload"> = {
    removeForRetention: async () => ({ removed: true }),
    forget: async () => ({ forgotten: true }),
    reclaimBlobs: async (a) => ({ removed: a.digests.map((sha256) => ({ sha256, size: 1 })) }),
    verifyBlob: async () => ({ outcome: "corrupt", forgottenCount: 1 }),
    backfill: async (repository, paths) => ({ filled: paths.length }),
    collect: async () => ({ counts: {} }),
  };
  const deps: WalkRunnerDeps = {
    store: {
      markInterrupted: async () => 0,
      runningRuns: async () => [...(o.elsewhere ?? []), ...[...records.values()].filter((r) => r.outcome === "running")],
      pruneRuns: async () => {},
      startRun: async (r) => {
        const rec: RunRecord = { id: String(records.size + 1), ...r, started: new Date(), ended: null, outcome: "running", counts: {}, entries: 0, bytes: 0, blobs: 0, durationMs: null, reference: null, detail: null, problems: { count: 0, first: [] } };
        records.set(rec.id, rec);
        return rec;
      },
      progress: async () => {},
      finishRun: async (id, p) => {
        const rec = { ...records.get(id)!, ...p, ended: new Date() };
        records.set(id, rec);
        return rec;
      },
    },
    leases: {
      holder: "me",
      acquire: async (name) => {
        if (o.leaseFree === false) return undefined;
        leasesTaken.push(name);
        return { name, lost: () => false, release: async () => void released++ };
      },
    },
    source: {
      repositories: async () => {
        repositoryReads++;
        return (o.repositories ?? (async () => [{ name: "libs", format: "raw", retention: null }]))();
      },
      metadata: async function* () {
        if (index.length) yield index;
      },
    },
    actions,
    blobs: blobs.store,
    reclaimGraceMs: 3_600_000,
    log,
    metrics: walkMetricsFactory({ registry: new Registry() } as never),
    readOnly: o.readOnly ?? false,
  };
  return { blobs, index, lines, records, runner: walkRunnerFactory(deps), released: () => released, leasesTaken, repositoryReads: () => repositoryReads };
}

describe("walk runner", () => {
  let t: ReturnType<typeof setup>;
  beforeEach(() => (t = setup()));

  it("records a run from start to its outcome, with per-job counts, and releases the lease", async () => {
    t.index.push(row("a.txt"));
    t.blobs.plant("orphan", { ageMs: 2 * 3_600_000 });
    const { started } = await t.runner.begin("rebuild", ["reclaim", "backfill"], "manual", null);
    expect(started?.run).toMatchObject({ walk: "rebuild", outcome: "running", jobs: ["reclaim", "backfill"], holder: "me" });
    await started!.done;
    const rec = t.records.get(started!.run.id)!;
    expect(rec).toMatchObject({ outcome: "succeeded", entries: 1, bytes: 1, blobs: 1, counts: { reclaim: { blobs: 1, bytes: 1 }, backfill: { filled: 1 } } });
    expect(rec.durationMs).toBeGreaterThanOrEqual(0);
    expect(t.released()).toBe(1);
    expect(t.leasesTaken).toEqual(["store"]);
  });

  it("walks begun together read the store once, and each run record gets its own jobs' counts", async () => {
    t.index.push(row("a.txt"));
    const { started } = await t.runner.beginTogether(
      [
        { walk: "rebuild", jobs: ["reclaim", "backfill"] },
        { walk: "retention", jobs: ["retention"] },
      ],
      "schedule",
      new Date("2026-03-08T03:00:00Z"),
    );
    expect(started.map((s) => s.run.walk)).toEqual(["rebuild", "retention"]);
    expect(started[0]!.done).toBe(started[1]!.done);
    await started[0]!.done;
    expect(t.repositoryReads()).toBe(1);
    const [rebuild, retention] = started.map((s) => t.records.get(s.run.id)!);
    expect(rebuild).toMatchObject({ outcome: "succeeded", entries: 1, counts: { reclaim: { tempFiles: 0 }, backfill: { filled: 1 } } });
    expect(Object.keys(rebuild!.counts)).toEqual(["reclaim", "backfill"]);
    expect(retention).toMatchObject({ outcome: "succeeded", entries: 1 });
    expect(Object.keys(retention!.counts)).toEqual(["retention"]);
    // One pass, one lease over the store.
    expect(t.released()).toBe(1);
    expect(t.lines.filter((l) => l.msg === "walk ended")).toHaveLength(2);
  });

  it("one walk over the store at a time: a second walk, here or elsewhere, does not start and is told which walk holds the store", async () => {
    // Both asked at once in one process: the second must not ride on the first one's lease.
    const [first, second] = await Promise.all([t.runner.begin("rebuild", ["reclaim"], "manual", null), t.runner.begin("retention", ["retention"], "manual", null)]);
    expect(first.started?.run.walk).toBe("rebuild");
    expect(second.started).toBeUndefined();
    expect(second.busy).toMatchObject({ walk: "rebuild", node: "me" });
    expect(describeBusy(second.busy!)).toMatch(/^walk rebuild is going over the store \(run 1, on me, since /);
    expect(t.records.size).toBe(1);
    await first.started!.done;
    expect((await t.runner.begin("retention", ["retention"], "manual", null)).started?.run.walk).toBe("retention");

    const elsewhere: RunRecord = { id: "41", walk: "retention", trigger: "schedule", scheduledFor: null, holder: "walker@b#1", jobs: ["retention"], started: new Date("2026-03-08T03:00:00Z"), ended: null, outcome: "running", counts: {}, entries: 0, bytes: 0, blobs: 0, durationMs: null, reference: null, detail: null, problems: { count: 0, first: [] } };
    const busy = setup({ leaseFree: false, elsewhere: [elsewhere] });
    const r = await busy.runner.begin("rebuild", ["reclaim"], "manual", null);
    expect(r.started).toBeUndefined();
    expect(describeBusy(r.busy!)).toBe("walk retention is going over the store (run 41, on walker@b#1, since 2026-03-08T03:00:00.000Z)");
    expect(busy.records.size).toBe(0);
  });

  it("a failing walk ends failed with a reference, logged as an unexpected failure while walking it", async () => {
    const broken = setup({ repositories: async () => Promise.reject(new Error("artifacts service unreachable")) });
    const { started } = await broken.runner.begin("retention", ["retention"], "schedule", new Date());
    await started!.done;
    const rec = broken.records.get(started!.run.id)!;
    expect(rec.outcome).toBe("failed");
    expect(rec.reference).toMatch(REFERENCE_RE);
    expect(broken.lines.find((l) => l.msg === `Unexpected failure ${rec.reference} while walking retention`)).toBeDefined();
    expect(broken.released()).toBe(1);
  });

  it("on a read-only store the jobs look and count but change nothing", async () => {
    const ro = setup({ readOnly: true });
    ro.blobs.stageLeftover("old", "x", 2 * 3_600_000);
    const orphan = ro.blobs.plant("orphaned", { ageMs: 2 * 3_600_000 });
    // A row whose blob is missing, and a blob that is not what its name says.
    ro.index.push(row("ghost.txt"));
    const corrupt = ro.blobs.plant("flipped", { ageMs: 2 * 3_600_000, as: "c".repeat(64) });
    const { started } = await ro.runner.begin("rebuild", ["reclaim", "repair", "backfill"], "manual", null);
    await started!.done;
    const rec = ro.records.get(started!.run.id)!;
    expect(rec.counts).toEqual({
      reclaim: { tempFiles: 0, uploads: 0, blobs: 0, blobBytes: 0, bytes: 0 },
      repair: { checked: 2, hashedBytes: 15, corrupt: 0, missing: 1, forgotten: 0 },
      backfill: { filled: 0 },
    });
    expect([ro.blobs.hasStaged("old"), ro.blobs.has(orphan), ro.blobs.has(corrupt)]).toEqual([true, true, true]);
  });

  it("stopping the service interrupts a walk between entries", async () => {
    for (let i = 0; i < 50; i++) t.index.push(row(`f${i}`));
    const { started } = await t.runner.begin("rebuild", ["backfill"], "manual", null);
    await t.runner.stop();
    expect(["interrupted", "succeeded"]).toContain(t.records.get(started!.run.id)!.outcome);
    expect((await t.runner.begin("rebuild", ["backfill"], "manual", null)).started).toBeUndefined();
  });
});
