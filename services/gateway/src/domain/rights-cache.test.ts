// The key cache's answers to made-up keys: remembered briefly, and never at the expense of real ones.
import { describe, expect, it } from "vitest";
import { rightsCacheFactory, type KeyRights } from "./rights-cache.js";

const real = (id: string): KeyRights => ({ id, tenant: "default", revoked: false, expiresAt: Infinity, allowedFrom: null, grants: [] });

function counted(known: string[]) {
  const asked: string[] = [];
  const lookup = async (id: string) => {
    asked.push(id);
    return known.includes(id) ? real(id) : null;
  };
  return { asked, lookup };
}

describe("rights cache", () => {
  it("asks the auth service once for a flood of one made-up key", async () => {
    const { asked, lookup } = counted([]);
    const cache = rightsCacheFactory({ ttlMs: 60_000, lookup });
    await Promise.all(Array.from({ length: 50 }, () => cache.get("forged")));
    for (let i = 0; i < 50; i++) expect(cache.peek("forged")).toEqual({ value: null });
    expect(asked).toEqual(["forged"]);
  });

  it("forgets a made-up key after the negative window", async () => {
    const { asked, lookup } = counted([]);
    const cache = rightsCacheFactory({ ttlMs: 60_000, negativeTtlMs: 20, lookup });
    await cache.get("forged");
    expect(cache.peek("forged")).toEqual({ value: null });
    await new Promise((r) => setTimeout(r, 60));
    expect(cache.peek("forged")).toBeUndefined();
    await cache.get("forged");
    expect(asked).toEqual(["forged", "forged"]);
  });

  it("keeps real keys while a flood of different made-up keys passes", async () => {
    const { asked, lookup } = counted(["a", "b"]);
    const cache = rightsCacheFactory({ ttlMs: 60_000, max: 2, negativeMax: 3, lookup });
    await cache.get("a");
    await cache.get("b");
    for (let i = 0; i < 100; i++) await cache.get(`forged-${i}`);
    expect(cache.peek("a")?.value?.id).toBe("a");
    expect(cache.peek("b")?.value?.id).toBe("b");
    expect(asked.filter((id) => !id.startsWith("forged"))).toEqual(["a", "b"]);
  });

  it("forgets that a key was unknown when it is announced as changed", async () => {
    const known: string[] = [];
    const cache = rightsCacheFactory({ ttlMs: 60_000, lookup: async (id) => (known.includes(id) ? real(id) : null) });
    expect(await cache.get("k")).toBeNull();
    known.push("k");
    cache.evict("k");
    expect(cache.peek("k")).toBeUndefined();
    expect((await cache.get("k"))?.id).toBe("k");
  });

  it("remembers nothing when the cache is off", async () => {
    const { asked, lookup } = counted([]);
    const cache = rightsCacheFactory({ ttlMs: 0, lookup });
    await cache.get("forged");
    expect(cache.peek("forged")).toBeUndefined();
    await cache.get("forged");
    expect(asked).toEqual(["forged", "forged"]);
  });
});
