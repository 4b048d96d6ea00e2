import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { REFERENCE_RE } from "@svc/contracts";
import type { RunRecord } from "../store/walk-store.js";
import type { WalkActions } from "./job-types.js";
import { walkMetricsFactory } from "./walk-metrics.js";
import { describeBusy, walkRunnerFactory, type WalkRunnerDeps } from "./walk-runner.js";

function setup(o: { leaseFree?: boolean; readOnly?: boolean; repositories?: () => Promise<never[]>; elsewhere?: RunRecord[] } = {}) {
  const root = mkdtempSync(join(tmpdir(), "walk-runner-"));
  mkdirSync(join(root, "tmp"));
  mkdirSync(join(root, "repositories", "libs"), { recursive: true });
  const lines: { msg: string; reference?: string }[] = [];
  const log = pino({ level: "info" }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  const records = new Map<string, RunRecord>();
  let released = 0;
  const leasesTaken: string[] = [];
  let repositoryReads = 0;
  const actions: WalkActions = {
    removeForRetention: async () => ({ removed: true }),
    index: async () => ({ outcome: "created" }),
    forget: async () => ({ forgotten: true }),
    removeTemp: async () => 1,
    removeEmptyFolder: async () => true,
    removeBlob: async () => 1,
  };
  const deps: WalkRunnerDeps = {
    store: {
      markInterrupted: async () => 0,
      runningRuns: async () => [...(o.elsewhere ?? []), ...[...records.values()].filter((r) => r.outcome === "running")],
      pruneRuns: async () => {},
      startRun: async (r) => {
        const rec: RunRecord = { id: String(records.size + 1), ...r, started: new Date(), ended: null, outcome: "running", counts: {}, entries: 0, bytes: 0, reference: null, detail: null, problems: { count: 0, first: [] } };
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
      metadata: async function* () {},
    },
    actions,
    root,
    log,
    metrics: walkMetricsFactory({ registry: new Registry() } as never),
    readOnly: o.readOnly ?? false,
  };
  return { root, lines, records, runner: walkRunnerFactory(deps), released: () => released, leasesTaken, repositoryReads: () => repositoryReads };
}

describe("walk runner", () => {
  let t: ReturnType<typeof setup>;
  beforeEach(() => (t = setup()));
  afterEach(() => rmSync(t.root, { recursive: true, force: true }));

  it("records a run from start to its outcome, with per-job counts, and releases the lease", async () => {
    writeFileSync(join(t.root, "repositories", "libs", "a.txt"), "a");
    const { started } = await t.runner.begin("rebuild", ["reclaim", "backfill"], "manual", null);
    expect(started?.run).toMatchObject({ walk: "rebuild", outcome: "running", jobs: ["reclaim", "backfill"], holder: "me" });
    await started!.done;
    expect(t.records.get(started!.run.id)).toMatchObject({ outcome: "succeeded", entries: 1, bytes: 1, counts: { reclaim: { unindexed: 1 }, backfill: { filled: 1, bytes: 1 } } });
    expect(t.released()).toBe(1);
    expect(t.leasesTaken).toEqual(["store"]);
  });

  it("walks begun together read the store once, and each run record gets its own jobs' counts", async () => {
    writeFileSync(join(t.root, "repositories", "libs", "a.txt"), "a");
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
    expect(rebuild).toMatchObject({ outcome: "succeeded", entries: 1, counts: { reclaim: { unindexed: 1 }, backfill: { filled: 1, bytes: 1 } } });
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

    const elsewhere: RunRecord = { id: "41", walk: "retention", trigger: "schedule", scheduledFor: null, holder: "walker@b#1", jobs: ["retention"], started: new Date("2026-03-08T03:00:00Z"), ended: null, outcome: "running", counts: {}, entries: 0, bytes: 0, reference: null, detail: null, problems: { count: 0, first: [] } };
    const busy = setup({ leaseFree: false, elsewhere: [elsewhere] });
    try {
      const r = await busy.runner.begin("rebuild", ["reclaim"], "manual", null);
      expect(r.started).toBeUndefined();
      expect(describeBusy(r.busy!)).toBe("walk retention is going over the store (run 41, on walker@b#1, since 2026-03-08T03:00:00.000Z)");
      expect(busy.records.size).toBe(0);
    } finally {
      rmSync(busy.root, { recursive: true, force: true });
    }
  });

  it("a failing walk ends failed with a reference, logged as an unexpected failure while walking it", async () => {
    const broken = setup({ repositories: async () => Promise.reject(new Error("artifacts service unreachable")) });
    try {
      const { started } = await broken.runner.begin("retention", ["retention"], "schedule", new Date());
      await started!.done;
      const rec = broken.records.get(started!.run.id)!;
      expect(rec.outcome).toBe("failed");
      expect(rec.reference).toMatch(REFERENCE_RE);
      expect(broken.lines.find((l) => l.msg === `Unexpected failure ${rec.reference} while walking retention`)).toBeDefined();
      expect(broken.released()).toBe(1);
    } finally {
      rmSync(broken.root, { recursive: true, force: true });
    }
  });

  it("on a read-only store the jobs look and count but change nothing", async () => {
    const ro = setup({ readOnly: true });
    try {
      writeFileSync(join(ro.root, "tmp", "old"), "x");
      const old = new Date(Date.now() - 2 * 3_600_000);
      utimesSync(join(ro.root, "tmp", "old"), old, old);
      const orphan = join(ro.root, "blobs", "sha256", "ab", "ab".padEnd(64, "0"));
      mkdirSync(join(orphan, ".."), { recursive: true });
      writeFileSync(orphan, "orphaned");
      utimesSync(orphan, old, old);
      const { started } = await ro.runner.begin("rebuild", ["reclaim"], "manual", null);
      await started!.done;
      expect(ro.records.get(started!.run.id)?.counts.reclaim).toMatchObject({ tempFiles: 0, blobs: 0, bytes: 0 });
    } finally {
      rmSync(ro.root, { recursive: true, force: true });
    }
  });

  it("stopping the service interrupts a walk between entries", async () => {
    for (let i = 0; i < 50; i++) writeFileSync(join(t.root, "repositories", "libs", `f${i}`), "x");
    const { started } = await t.runner.begin("rebuild", ["backfill"], "manual", null);
    await t.runner.stop();
    expect(["interrupted", "succeeded"]).toContain(t.records.get(started!.run.id)!.outcome);
    expect((await t.runner.begin("rebuild", ["backfill"], "manual", null)).started).toBeUndefined();
  });
});
