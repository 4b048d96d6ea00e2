import { describe, expect, it } from "vitest";
import type { BlobInfo, JobContext, MetaInfo, StoreEntry, WalkActions } from "../job-types.js";
import { backfillJob } from "./backfill.js";
import { reclaimJob, STALE_STAGED_MS } from "./reclaim.js";
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
    forget: async (a) => (calls.push(`forget ${a.path}`), { forgotten: true }),
    reclaimBlobs: async (a) => (calls.push(`reclaim ${a.digests.map((d) => d.slice(0, 4)).join(",")} after ${a.olderThanMs}`), { removed: a.digests.map((sha256) => ({ sha256, size: 7 })) }),
    verifyBlob: async (a) => (calls.push(`verify ${a.sha256.slice(0, 4)}`), { outcome: "corrupt", forgottenCount: 2 }),
    backfill: async (repository, paths) => (calls.push(`backfill ${repository} ${paths.join(",")}`), { filled: paths.length - 1 }),
    collect: async () => ({ counts: {} }),
    deleteStaged: async (n) => (calls.push(`staged ${n}`), 5),
    abortUpload: async (u) => (calls.push(`abort ${u.key}`), true),
    ...overrides,
  };
  /** What the store's bytes hash to now: each blob's own digest unless a test says otherwise. */
  const digests = new Map<string, string | undefined>();
  const ctx: JobContext = { actions, blobs: { digestOf: async (d) => (digests.has(d) ? digests.get(d) : d) }, now: NOW, reclaimGraceMs: GRACE };
  return { calls, ctx, digests };
}
const GRACE = 3_600_000;
const blob = (c: string, ageMs: number, size = 7): BlobInfo => ({ sha256: c.repeat(64), size, modified: new Date(NOW.getTime() - ageMs) });
const entry = (path: string, meta: MetaInfo, o: { missing?: boolean } = {}): StoreEntry => ({ repository: "libs", path, meta, blob: async () => (o.missing ? undefined : blob("a", DAY)) });

describe("a format's collection", () => {
  it("runs once per repository, after its last row: gc from reclaim, retention from retention, its counts added", async () => {
    const { calls, ctx } = recorder({
      collect: async (repository, step, graceMs) => (calls.push(`collect ${repository} ${step} ${graceMs}`), { counts: (step === "gc" ? { collected: 2, collectedBytes: 30 } : { tagsRemoved: 1 }) as Record<string, number> }),
    });
    const reclaim = reclaimJob(ctx);
    const retention = retentionJob(ctx);
    retention.beginRepository!({ name: "images", format: "oci", retention: null });
    for (const j of [reclaim, retention]) {
      await j.leaveFolder!("images", "app/blobs");
      await j.leaveFolder!("images", "");
    }
    expect(calls).toEqual([`collect images gc ${GRACE}`, `collect images retention ${GRACE}`]);
    expect(reclaim.counts).toMatchObject({ collected: 2, collectedBytes: 30, bytes: 30 });
    expect(retention.counts).toMatchObject({ tagsRemoved: 1, removed: 0 });
  });
});

describe("retention job", () => {
  it("removes per folder, only within the policy's path, through the artifacts service", async () => {
    const { calls, ctx } = recorder();
    const job = retentionJob(ctx);
    job.beginRepository!({ name: "libs", format: "raw", retention: { path: "com/acme", keepVersions: 1 } });
    for (const [p, age] of [["com/acme/app/1.zip", 3], ["com/acme/app/2.zip", 2], ["com/acme/lib/1.zip", 1], ["other/1.zip", 3], ["other/2.zip", 2]] as const) {
      await job.entry!(entry(p, v(p, age * DAY).meta));
    }
    await job.leaveFolder!("libs", "com/acme/app");
    await job.leaveFolder!("libs", "com/acme/lib");
    await job.leaveFolder!("libs", "other");
    expect(calls).toEqual(["remove com/acme/app/1.zip"]);
    expect(job.counts).toMatchObject({ versions: 3, removed: 1, bytes: 10, kept: 2 });
  });

  it("counts a version the service would not remove as skipped", async () => {
    const { calls, ctx } = recorder({ removeForRetention: async () => ({ removed: false, why: "changed" }) });
    const job = retentionJob(ctx);
    job.beginRepository!({ name: "libs", format: "raw", retention: { keepVersions: 1 } });
    await job.entry!(entry("a/1", v("a/1", 3 * DAY).meta));
    await job.entry!(entry("a/2", v("a/2", 1 * DAY).meta));
    await job.leaveFolder!("libs", "a");
    expect(calls).toEqual([]);
    expect(job.counts).toMatchObject({ removed: 0, skipped: 1, kept: 1 });
  });

  it("does nothing in a repository without a policy", async () => {
    const { calls, ctx } = recorder();
    const job = retentionJob(ctx);
    job.beginRepository!({ name: "libs", format: "raw", retention: null });
    await job.entry!(entry("a/1", v("a/1", 300 * DAY).meta));
    await job.leaveFolder!("libs", "a");
    expect(calls).toEqual([]);
  });
});

describe("reclaim job", () => {
  it("removes staged leftovers untouched for an hour and keeps fresh ones", async () => {
    const { calls, ctx } = recorder();
    const job = reclaimJob(ctx);
    await job.staged!({ name: "stale", size: 5, modified: new Date(NOW.getTime() - STALE_STAGED_MS - 1) });
    await job.staged!({ name: "fresh", size: 5, modified: new Date(NOW.getTime() - 1000) });
    expect(calls).toEqual(["staged stale"]);
    expect(job.counts).toEqual({ tempFiles: 1, uploads: 0, blobs: 0, blobBytes: 0, bytes: 5 });
  });

  it("aborts an object store's multipart uploads begun over an hour before and never completed, and keeps younger ones", async () => {
    const { calls, ctx } = recorder();
    const job = reclaimJob(ctx);
    await job.abandonedUpload!({ key: "staging/old", uploadId: "1", initiated: new Date(NOW.getTime() - STALE_STAGED_MS - 1) });
    await job.abandonedUpload!({ key: "staging/young", uploadId: "2", initiated: new Date(NOW.getTime() - 1000) });
    expect(calls).toEqual(["abort staging/old"]);
    expect(job.counts).toMatchObject({ uploads: 1 });

    const { ctx: frozen } = recorder({ abortUpload: async () => false });
    const none = reclaimJob(frozen);
    await none.abandonedUpload!({ key: "staging/old", uploadId: "1", initiated: new Date(0) });
    expect(none.counts).toMatchObject({ uploads: 0 });
  });

  it("asks the artifacts service to remove the blobs of a page older than the grace, in one call with the grace, and counts what it removed", async () => {
    const { calls, ctx } = recorder();
    const job = reclaimJob(ctx);
    await job.staged!({ name: "stale", size: 5, modified: new Date(0) });
    // Younger than svc.storage.reclaim-grace: a publish may be about to commit its row; not even asked about.
    await job.blobPage!([blob("a", GRACE + 1), blob("b", GRACE - 1), blob("c", 30 * DAY)]);
    expect(calls).toEqual(["staged stale", `reclaim aaaa,cccc after ${GRACE}`]);
    expect(job.counts).toEqual({ tempFiles: 1, uploads: 0, blobs: 2, blobBytes: 14, bytes: 19 });
  });

  it("counts only what the artifacts service removed (the others referenced, touched meanwhile, or read-only), and asks nothing for a page of young blobs", async () => {
    const { calls, ctx } = recorder({ reclaimBlobs: async (a) => (calls.push(`reclaim ${a.digests.length}`), { removed: [{ sha256: a.digests[1]!, size: 9 }] }) });
    const job = reclaimJob(ctx);
    await job.blobPage!([blob("a", DAY), blob("b", DAY)]);
    await job.blobPage!([blob("c", 1000)]);
    expect(calls).toEqual(["reclaim 2"]);
    expect(job.counts).toMatchObject({ blobs: 1, blobBytes: 9, bytes: 9 });
  });
});

describe("repair job", () => {
  it("hashes each blob and sends one whose bytes do not match its digest to the artifacts service, counting it and the paths it forgot", async () => {
    const { calls, ctx, digests } = recorder();
    const job = repairJob(ctx);
    digests.set("b".repeat(64), "f".repeat(64));
    // Gone between the listing and the read: not checked.
    digests.set("c".repeat(64), undefined);
    for (const c of ["a", "b", "c"]) await job.blob!(blob(c, DAY, 10));
    expect(calls).toEqual(["verify bbbb"]);
    expect(job.counts).toEqual({ checked: 2, hashedBytes: 20, corrupt: 1, missing: 0, forgotten: 2 });
  });

  it("counts nothing when the artifacts service finds the blob intact after all", async () => {
    const { ctx, digests } = recorder({ verifyBlob: async () => ({ outcome: "intact", forgottenCount: 0 }) });
    digests.set("b".repeat(64), "f".repeat(64));
    const job = repairJob(ctx);
    await job.blob!(blob("b", DAY));
    expect(job.counts).toMatchObject({ checked: 1, corrupt: 0, forgotten: 0 });
  });

  it("reports a row whose blob is missing and has its row dropped; a row whose blob is there is left alone", async () => {
    const { calls, ctx } = recorder();
    const job = repairJob(ctx);
    await job.entry!(entry("ok", v("ok", DAY).meta));
    await job.entry!(entry("gone", v("gone", DAY).meta, { missing: true }));
    expect(calls).toEqual(["forget gone"]);
    expect(job.counts).toMatchObject({ missing: 1, forgotten: 1 });
  });
});

describe("backfill job", () => {
  it("sends each page's paths to the repository's format and counts the paths it filled", async () => {
    const { calls, ctx } = recorder();
    const job = backfillJob(ctx);
    await job.page!("libs", [entry("a/1", v("a/1", DAY).meta), entry("a/2", v("a/2", DAY).meta), entry("b", v("b", DAY).meta)]);
    await job.page!("libs", [entry("c", v("c", DAY).meta)]);
    expect(calls).toEqual(["backfill libs a/1,a/2,b", "backfill libs c"]);
    expect(job.counts).toEqual({ filled: 2 });
  });
});
