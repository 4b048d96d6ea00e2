import { describe, expect, it } from "vitest";
import type { FileInfo, JobContext, MetaInfo, StoreEntry, WalkActions } from "../job-types.js";
import { backfillJob } from "./backfill.js";
import { reclaimJob, STALE_TEMP_MS } from "./reclaim.js";
import { repairJob } from "./repair.js";
import { retentionJob, selectForRemoval, type Version } from "./retention.js";

const NOW = new Date("2026-06-01T00:00:00Z");
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();
const DAY = 86_400_000;
const v = (path: string, updatedAgo: number, extra: Partial<MetaInfo> = {}): Version => ({
  path,
  meta: { path, size: 10, sha256: "a".repeat(64), updated: ago(updatedAgo), lastDownloaded: null, held: false, ...extra },
});
const paths = (vs: Version[]) => vs.map((x) => x.path).sort();

describe("retention: which versions a policy removes", () => {
  const versions = [v("app-1.0.zip", 40 * DAY), v("app-1.1.zip", 20 * DAY), v("app-1.2.zip", 10 * DAY), v("app-1.3.zip", 1 * DAY)];

  it("keepVersions alone keeps the newest N of the folder by publish time", () => {
    expect(paths(selectForRemoval(versions, { keepVersions: 2 }, NOW))).toEqual(["app-1.0.zip", "app-1.1.zip"]);
    expect(selectForRemoval(versions, { keepVersions: 4 }, NOW)).toEqual([]);
  });

  it("maxAge removes what was published longer ago", () => {
    expect(paths(selectForRemoval(versions, { maxAge: "P15D" }, NOW))).toEqual(["app-1.0.zip", "app-1.1.zip"]);
  });

  it("keepVersions is a floor under the age rules", () => {
    expect(paths(selectForRemoval(versions, { maxAge: "P5D", keepVersions: 3 }, NOW))).toEqual(["app-1.0.zip"]);
  });

  it("unusedFor counts from the last download, or from the publish for what was never downloaded", () => {
    const used = [v("old-but-used", 90 * DAY, { lastDownloaded: ago(1 * DAY) }), v("old-unused", 90 * DAY, { lastDownloaded: ago(60 * DAY) }), v("never", 40 * DAY), v("new", 1 * DAY)];
    expect(paths(selectForRemoval(used, { unusedFor: "P30D" }, NOW))).toEqual(["never", "old-unused"]);
  });

  it("every age rule set must hold", () => {
    const vs = [v("old-used", 90 * DAY, { lastDownloaded: ago(1 * DAY) }), v("old-unused", 90 * DAY)];
    expect(paths(selectForRemoval(vs, { maxAge: "P30D", unusedFor: "P30D" }, NOW))).toEqual(["old-unused"]);
  });

  it("never removes a held version, and says nothing without a rule", () => {
    expect(paths(selectForRemoval([v("held", 90 * DAY, { held: true }), v("free", 90 * DAY)], { maxAge: "P1D" }, NOW))).toEqual(["free"]);
    expect(selectForRemoval(versions, {}, NOW)).toEqual([]);
  });

  it("orders versions published at the same instant by path, greatest newest", () => {
    const same = [v("b", DAY), v("a", DAY), v("c", DAY)];
    expect(paths(selectForRemoval(same, { keepVersions: 1 }, NOW))).toEqual(["a", "b"]);
  });
});

function recorder(overrides: Partial<WalkActions> = {}) {
  const calls: string[] = [];
  const actions: WalkActions = {
    removeForRetention: async (a) => (calls.push(`remove ${a.path}`), { removed: true, size: 10 }),
    index: async (a) => (calls.push(`index ${a.path} ${a.sha256.slice(0, 4)}`), { outcome: "created" }),
    forget: async (a) => (calls.push(`forget ${a.path}`), { forgotten: true }),
    removeTemp: async (n) => (calls.push(`temp ${n}`), 5),
    removeEmptyFolder: async (r, f) => (calls.push(`rmdir ${f}`), true),
    removeBlob: async (sha256) => (calls.push(`blob ${sha256.slice(0, 4)}`), 7),
    ...overrides,
  };
  const ctx: JobContext = { actions, now: NOW };
  return { calls, ctx };
}
const file: FileInfo = { ino: 1, size: 10, mtimeMs: NOW.getTime() - DAY };
const entry = (path: string, o: { file?: FileInfo; meta?: MetaInfo; sha?: string }): StoreEntry => ({ repository: "libs", path, file: o.file, meta: o.meta, sha256: async () => o.sha });

describe("retention job", () => {
  it("removes per folder, only within the policy's path, through the artifacts service", async () => {
    const { calls, ctx } = recorder();
    const job = retentionJob(ctx);
    job.beginRepository!({ name: "libs", format: "raw", retention: { path: "com/acme", keepVersions: 1 } });
    for (const [p, age] of [["com/acme/app/1.zip", 3], ["com/acme/app/2.zip", 2], ["com/acme/lib/1.zip", 1], ["other/1.zip", 3], ["other/2.zip", 2]] as const) {
      await job.entry!(entry(p, { file, meta: v(p, age * DAY).meta }));
    }
    await job.leaveFolder!("libs", "com/acme/app", 2);
    await job.leaveFolder!("libs", "com/acme/lib", 1);
    await job.leaveFolder!("libs", "other", 2);
    expect(calls).toEqual(["remove com/acme/app/1.zip"]);
    expect(job.counts).toMatchObject({ versions: 3, removed: 1, bytes: 10, kept: 2 });
  });

  it("leaves files the index does not know, and counts a version the service would not remove as skipped", async () => {
    const { calls, ctx } = recorder({ removeForRetention: async () => ({ removed: false, why: "changed" }) });
    const job = retentionJob(ctx);
    job.beginRepository!({ name: "libs", format: "raw", retention: { keepVersions: 1 } });
    await job.entry!(entry("a/unindexed", { file }));
    await job.entry!(entry("a/1", { file, meta: v("a/1", 3 * DAY).meta }));
    await job.entry!(entry("a/2", { file, meta: v("a/2", 1 * DAY).meta }));
    await job.leaveFolder!("libs", "a", 3);
    expect(calls).toEqual([]);
    expect(job.counts).toMatchObject({ removed: 0, skipped: 1, kept: 1 });
  });

  it("does nothing in a repository without a policy", async () => {
    const { calls, ctx } = recorder();
    const job = retentionJob(ctx);
    job.beginRepository!({ name: "libs", format: "raw", retention: null });
    await job.entry!(entry("a/1", { file, meta: v("a/1", 300 * DAY).meta }));
    await job.leaveFolder!("libs", "a", 1);
    expect(calls).toEqual([]);
  });
});

describe("reclaim job", () => {
  it("removes uploads untouched for an hour and keeps fresh ones", async () => {
    const { calls, ctx } = recorder();
    const job = reclaimJob(ctx);
    await job.temp!({ name: "stale", size: 5, mtimeMs: NOW.getTime() - STALE_TEMP_MS - 1 });
    await job.temp!({ name: "fresh", size: 5, mtimeMs: NOW.getTime() - 1000 });
    expect(calls).toEqual(["temp stale"]);
    expect(job.counts).toMatchObject({ tempFiles: 1, bytes: 5 });
  });

  it("removes blobs linked from nothing and untouched for an hour, counting them and their bytes", async () => {
    const { calls, ctx } = recorder();
    const job = reclaimJob(ctx);
    const old = NOW.getTime() - STALE_TEMP_MS - 1;
    await job.temp!({ name: "stale", size: 5, mtimeMs: old });
    await job.blob!({ sha256: "a".repeat(64), size: 7, nlink: 1, mtimeMs: old });
    // Still linked from an artifact path, or orphaned too recently to be sure.
    await job.blob!({ sha256: "b".repeat(64), size: 7, nlink: 2, mtimeMs: old });
    await job.blob!({ sha256: "c".repeat(64), size: 7, nlink: 1, mtimeMs: NOW.getTime() - 1000 });
    expect(calls).toEqual(["temp stale", "blob aaaa"]);
    expect(job.counts).toMatchObject({ tempFiles: 1, blobs: 1, blobBytes: 7, bytes: 12 });
  });

  it("counts no blob the store kept (linked meanwhile, or read-only)", async () => {
    const { ctx } = recorder({ removeBlob: async () => undefined });
    const job = reclaimJob(ctx);
    await job.blob!({ sha256: "a".repeat(64), size: 7, nlink: 1, mtimeMs: 0 });
    expect(job.counts).toMatchObject({ blobs: 0, blobBytes: 0, bytes: 0 });
  });

  it("never removes content without metadata: it is counted for backfill", async () => {
    const { calls, ctx } = recorder();
    const job = reclaimJob(ctx);
    await job.entry!(entry("loose.bin", { file }));
    expect(calls).toEqual([]);
    expect(job.counts.unindexed).toBe(1);
  });

  it("removes empty folders bottom up, a parent emptied by the walk too, never the repository folder", async () => {
    const { calls, ctx } = recorder();
    const job = reclaimJob(ctx);
    await job.leaveFolder!("libs", "a/b/c", 0);
    await job.leaveFolder!("libs", "a/b", 1);
    await job.leaveFolder!("libs", "a/keep", 1);
    await job.leaveFolder!("libs", "a", 2);
    await job.leaveFolder!("libs", "", 0);
    expect(calls).toEqual(["rmdir a/b/c", "rmdir a/b"]);
    expect(job.counts.emptyFolders).toBe(2);
  });
});

describe("repair and backfill jobs", () => {
  const good = "b".repeat(64);

  it("repair corrects metadata whose digest or size differs from the file", async () => {
    const { calls, ctx } = recorder({ index: async (a) => (calls.push(`index ${a.path}`), { outcome: "corrected" }) });
    const job = repairJob(ctx);
    await job.entry!(entry("ok", { file, meta: { ...v("ok", DAY).meta, sha256: good }, sha: good }));
    await job.entry!(entry("stale", { file, meta: { ...v("stale", DAY).meta, sha256: "c".repeat(64) }, sha: good }));
    await job.entry!(entry("short", { file, meta: { ...v("short", DAY).meta, sha256: good, size: 3 }, sha: good }));
    expect(calls).toEqual(["index stale", "index short"]);
    expect(job.counts).toMatchObject({ checked: 3, fixed: 2, hashedBytes: 30 });
  });

  it("repair drops metadata whose file is gone, and passes a file removed while hashing by", async () => {
    const { calls, ctx } = recorder();
    const job = repairJob(ctx);
    await job.entry!(entry("gone", { meta: v("gone", DAY).meta }));
    await job.entry!(entry("vanished", { file, meta: v("vanished", DAY).meta, sha: undefined }));
    expect(calls).toEqual(["forget gone"]);
    expect(job.counts).toMatchObject({ forgotten: 1, checked: 0 });
  });

  it("backfill indexes files without metadata and nothing else", async () => {
    const { calls, ctx } = recorder();
    const job = backfillJob(ctx);
    await job.entry!(entry("new", { file, sha: good }));
    await job.entry!(entry("known", { file, meta: v("known", DAY).meta, sha: good }));
    await job.entry!(entry("meta-only", { meta: v("meta-only", DAY).meta }));
    expect(calls).toEqual(["index new bbbb"]);
    expect(job.counts).toEqual({ filled: 1, bytes: 10 });
  });
});
