import { describe, expect, it } from "vitest";
import type { ArtifactRecord } from "../store/metadata-store.js";
import { indexChangeTracker } from "../store/index-changes.js";
import { indexReadCacheFactory } from "./index-read-cache.js";

const record = (path: string, sha256: string): ArtifactRecord => ({
  repository: "r",
  path,
  size: 1,
  sha256,
  contentType: null,
  updated: new Date(0),
  lastDownloaded: null,
  downloads: 0,
  heldReason: null,
});

/** An index of paths to digests, counting its look-ups; `gate` holds a look-up until released. */
function fixture(opts: { ttlMs?: number; maxEntries?: number } = {}) {
  const index = new Map<string, string>();
  const feed = { up: true, lost: 0 };
  let clock = 0;
  let lookups = 0;
  let gate: Promise<void> | undefined;
  const cache = indexReadCacheFactory({
    find: async (_repository, path) => {
      lookups++;
      const sha = index.get(path);
      await gate;
      return sha === undefined ? undefined : record(path, sha);
    },
    ttlMs: opts.ttlMs ?? 10_000,
    maxEntries: opts.maxEntries ?? 100,
    feed: { connected: () => feed.up, losses: () => feed.lost },
    now: () => clock,
  });
  const read = async (path: string) => (await cache.find("r", path)).row?.sha256;
  return {
    index,
    feed,
    cache,
    read,
    lookups: () => lookups,
    advance: (ms: number) => (clock += ms),
    hold() {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

describe("the read cache", () => {
  it("answers a path again from memory until it is evicted, then from the index", async () => {
    const f = fixture();
    f.index.set("a", "1");
    expect(await f.read("a")).toBe("1");
    f.index.set("a", "2");
    expect(await f.read("a")).toBe("1");
    expect(f.lookups()).toBe(1);
    f.cache.evict("r", "a");
    expect(await f.read("a")).toBe("2");
    expect(f.lookups()).toBe(2);
  });

  it("never keeps a path that has no artifact: a publish is served at once", async () => {
    const f = fixture();
    expect(await f.read("new")).toBeUndefined();
    f.index.set("new", "1");
    expect(await f.read("new")).toBe("1");
  });

  it("evicts a whole repository when told without a path", async () => {
    const f = fixture();
    f.index.set("a", "1").set("b", "1");
    await f.read("a");
    await f.read("b");
    f.index.set("a", "2").set("b", "2");
    f.cache.evict("r");
    expect([await f.read("a"), await f.read("b")]).toEqual(["2", "2"]);
  });

  it("does not keep a row read before an eviction that came while it was read", async () => {
    const f = fixture();
    f.index.set("a", "1");
    const release = f.hold();
    const reading = f.read("a");
    // The change commits and is told while the look-up (which saw the old row) is on its way.
    f.index.set("a", "2");
    f.cache.evict("r", "a");
    release();
    expect(await reading).toBe("1");
    expect(await f.read("a")).toBe("2");
  });

  it("asks the index again once an entry is older than the TTL, and never caches with a TTL of 0", async () => {
    const f = fixture({ ttlMs: 1000 });
    f.index.set("a", "1");
    await f.read("a");
    f.index.set("a", "2");
    f.advance(999);
    expect(await f.read("a")).toBe("1");
    f.advance(1);
    expect(await f.read("a")).toBe("2");

    const off = fixture({ ttlMs: 0 });
    off.index.set("a", "1");
    await off.read("a");
    await off.read("a");
    expect(off.lookups()).toBe(2);
    expect(off.cache.size()).toBe(0);
  });

  it("is bypassed while NATS is away and starts empty once it is back", async () => {
    const f = fixture();
    f.index.set("a", "1");
    await f.read("a");
    f.feed.up = false;
    f.index.set("a", "2");
    expect(await f.read("a")).toBe("2");
    expect(f.cache.size()).toBe(0);
    f.index.set("a", "3");
    f.feed.up = true;
    f.feed.lost = 1;
    expect(await f.read("a")).toBe("3");
  });

  it("forgets what it held when the connection was lost and back between two reads", async () => {
    const f = fixture();
    f.index.set("a", "1");
    await f.read("a");
    f.index.set("a", "2");
    // Events sent while it was away never arrive: the loss count tells.
    f.feed.lost = 1;
    expect(await f.read("a")).toBe("2");
  });

  it("keeps at most maxEntries, the oldest going first", async () => {
    const f = fixture({ maxEntries: 2 });
    for (const p of ["a", "b", "c"]) f.index.set(p, "1");
    for (const p of ["a", "b", "c"]) await f.read(p);
    expect(f.cache.size()).toBe(2);
    const before = f.lookups();
    await f.read("c");
    await f.read("a");
    expect(f.lookups()).toBe(before + 1);
  });
});

describe("the read cache told of this process's changes", () => {
  it("keeps the row a committed publish wrote, and evicts on a change without one", async () => {
    const f = fixture();
    f.index.set("a", "1");
    await f.read("a");
    f.cache.changed("r", "a", record("a", "2"));
    expect(await f.read("a")).toBe("2");
    expect(f.lookups()).toBe(1);
    f.cache.changed("r", "a");
    f.index.set("a", "3");
    expect(await f.read("a")).toBe("3");
    expect(f.lookups()).toBe(2);
  });

  it("keeps a publish's row when its own event comes back, and evicts it for another publish's event", async () => {
    const f = fixture();
    const row = record("a", "1");
    f.cache.changed("r", "a", row);
    f.cache.published("r", "a", "1", row.updated.toISOString());
    expect(await f.read("a")).toBe("1");
    expect(f.lookups()).toBe(0);
    f.index.set("a", "1");
    // The same content published again elsewhere: a new time, so a new Last-Modified.
    f.cache.published("r", "a", "1", new Date(5000).toISOString());
    expect(await f.read("a")).toBe("1");
    expect(f.lookups()).toBe(1);
    f.index.set("a", "2");
    f.cache.published("r", "a", "2", new Date(6000).toISOString());
    expect(await f.read("a")).toBe("2");
  });

  it("keeps nothing told while NATS is away", async () => {
    const f = fixture();
    f.feed.up = false;
    f.cache.changed("r", "a", record("a", "2"));
    expect(f.cache.size()).toBe(0);
  });
});

describe("the index change tracker", () => {
  it("tells a publish's row only once its transaction committed, never after a rollback", async () => {
    const t = indexChangeTracker();
    const told: Array<string | undefined> = [];
    t.listen((_repository, _path, now) => told.push(now?.sha256));
    await t.transaction(async () => t.changing("r", "a", record("a", "1")));
    expect(told).toEqual([undefined, "1"]);
    told.length = 0;
    await expect(
      t.transaction(async () => {
        t.changing("r", "a", record("a", "2"));
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(told).toEqual([undefined, undefined]);
  });

  it("tells a change made in a transaction as it is made and again once the transaction has ended", async () => {
    const t = indexChangeTracker();
    const told: string[] = [];
    t.listen((repository, path) => told.push(`${repository}/${path ?? "*"}`));
    let during: string[] = [];
    await t.transaction(async () => {
      t.changing("r", "a");
      await t.change("r", "b", async () => undefined);
      during = [...told];
    });
    expect(during).toEqual(["r/a", "r/b"]);
    expect(told).toEqual(["r/a", "r/b", "r/a", "r/b"]);
  });

  it("tells a change of its own statement before and after it, and a failed transaction's changes too", async () => {
    const t = indexChangeTracker();
    const told: string[] = [];
    t.listen((repository, path) => told.push(`${repository}/${path ?? "*"}`));
    await t.change("r", undefined, async () => told.push("statement"));
    expect(told).toEqual(["r/*", "statement", "r/*"]);
    told.length = 0;
    await expect(
      t.transaction(async () => {
        t.changing("r", "a");
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(told).toEqual(["r/a", "r/a"]);
  });
});
