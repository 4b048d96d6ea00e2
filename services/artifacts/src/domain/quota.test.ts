import { describe, expect, it } from "vitest";
import type { ArtifactRecord, RepositoryUsage } from "../store/metadata-store.js";
import { OVER_QUOTA } from "../store/quota-migrations.js";
import { bytesOf, quotaFactory, quotaRefusalOf } from "./quota.js";

const record = (path: string, size: number): ArtifactRecord => ({ repository: "cache", path, size, sha256: path.padEnd(64, "0"), contentType: null, updated: new Date(0), lastDownloaded: null, downloads: 0, heldReason: null });

function setUp(usage: RepositoryUsage, files: ArtifactRecord[] = []) {
  const removed: string[] = [];
  const quota = quotaFactory({
    metadata: {
      usage: async (name?: string) => (name === undefined || name === usage.repository ? [usage] : []),
      find: async (_r: string, path: string) => files.find((f) => f.path === path),
      leastRecentlyUsed: async (_r: string, keep: string, limit: number) => files.filter((f) => f.path !== keep && !removed.includes(f.path)).slice(0, limit),
    },
    artifacts: {
      removeForRetention: async (a) => {
        const f = files.find((x) => x.path === a.path)!;
        removed.push(f.path);
        usage.usedBytes -= f.size;
        return { removed: true, size: f.size };
      },
    },
  });
  return { quota, removed };
}

describe("storage quotas", () => {
  it("refuse early, with 413 and a sentence naming the repository and figures, what would take a hosted repository over", async () => {
    const { quota } = setUp({ repository: "libs", type: "hosted", usedBytes: 900, quotaBytes: 1000 });
    await expect(quota.check("libs", 100)).resolves.toBeUndefined();
    await expect(quota.check("libs", 101)).rejects.toThrow(
      expect.objectContaining({ status: 413, message: 'repository libs is over its storage quota: 101 bytes more would make 1001 bytes of its 1000 bytes; nothing was stored (an administrator can raise it: PATCH /api/repositories/libs {"quotaBytes": N})' }),
    );
  });

  it("count a redeploy of a path as the difference from the file it replaces", async () => {
    const { quota } = setUp({ repository: "cache", type: "hosted", usedBytes: 900, quotaBytes: 1000 }, [record("a.bin", 500)]);
    await expect(quota.check("cache", 600, "a.bin")).resolves.toBeUndefined();
    await expect(quota.check("cache", 601, "a.bin")).rejects.toThrow(expect.objectContaining({ status: 413, message: expect.stringContaining("101 bytes more would make 1001 bytes") }));
    await expect(quota.check("cache", 100, "b.bin")).resolves.toBeUndefined();
    await expect(quota.check("cache", 101, "b.bin")).rejects.toThrow(expect.objectContaining({ status: 413 }));
  });

  it("never refuse a proxy, nor a repository without a quota", async () => {
    await expect(setUp({ repository: "p", type: "proxy", usedBytes: 5000, quotaBytes: 1000 }).quota.check("p", 10)).resolves.toBeUndefined();
    await expect(setUp({ repository: "h", type: "hosted", usedBytes: 5000, quotaBytes: null }).quota.check("h", 10)).resolves.toBeUndefined();
  });

  it("evict a proxy's least recently used files until it fits again, never the file just fetched", async () => {
    const usage = { repository: "cache", type: "proxy", usedBytes: 1300, quotaBytes: 1000 };
    const { quota, removed } = setUp(usage, [record("old.tgz", 200), record("older.tgz", 200), record("new.tgz", 500), record("fetched.tgz", 400)]);
    expect(await quota.evict("cache", "fetched.tgz")).toBe(2);
    expect(removed).toEqual(["old.tgz", "older.tgz"]);
    expect(usage.usedBytes).toBe(900);
    // Only the fetched file left over the quota: it stays.
    const alone = setUp({ repository: "cache", type: "proxy", usedBytes: 1500, quotaBytes: 1000 }, [record("big.tgz", 1500)]);
    expect(await alone.quota.evict("cache", "big.tgz")).toBe(0);
    // A hosted repository is never evicted from.
    expect(await setUp({ repository: "cache", type: "hosted", usedBytes: 1300, quotaBytes: 1000 }, [record("x", 500)]).quota.evict("cache", "y")).toBe(0);
  });

  it("read the usage trigger's refusal from Postgres's error, and leave every other error alone", () => {
    const err = Object.assign(new Error("repository libs is over its storage quota"), { code: OVER_QUOTA, detail: JSON.stringify({ repository: "libs", adding: 2048, used: 1_048_576, quota: 1_049_000 }) });
    expect(quotaRefusalOf(err)).toMatchObject({ status: 413, message: expect.stringContaining("2.0 KiB (2048 bytes) more would make 1.0 MiB (1050624 bytes) of its 1.0 MiB (1049000 bytes)") });
    expect(quotaRefusalOf(Object.assign(new Error("x"), { code: "23505" }))).toBeUndefined();
    expect(quotaRefusalOf(undefined)).toBeUndefined();
    expect(bytesOf(5 * 1024 ** 3)).toBe("5.0 GiB (5368709120 bytes)");
  });
});
