// The key cache's answers to made-up keys: remembered briefly, and never at the expense of real ones.
import { describe, expect, it } from "vitest";
import { compilePerson, personEntry, rightsCacheFactory, type KeyRights } from "./rights-cache.js";

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

  it("keeps people beside keys, and drops only the people after a change to people or groups made through this node", async () => {
    const asked: string[] = [];
    const cache = rightsCacheFactory({
      ttlMs: 60_000,
      lookup: async (id) => (asked.push(id), id.startsWith("person:") ? compilePerson({ id: id.slice(7), tenant: "default", grants: [], dependsOn: [] }) : real(id)),
    });
    await cache.get("k");
    await cache.get(personEntry("oidc/alice"));
    expect(cache.peek(personEntry("oidc/alice"))?.value).toMatchObject({ kind: "person", id: "oidc/alice" });
    expect(cache.parts().known.size).toBe(2);
    cache.evictPersons();
    expect(cache.peek("k")?.value?.id).toBe("k");
    expect(cache.peek(personEntry("oidc/alice"))).toBeUndefined();
    expect(asked).toEqual(["k", "person:oidc/alice"]);
  });

  it("drops a personal key, which depends on its person, with the people after such a change; an administrator's key stays", async () => {
    const cache = rightsCacheFactory({ ttlMs: 60_000, lookup: async (id) => (id === "personal" ? { ...real(id), owner: "oidc/bob", dependsOn: ["person:oidc/bob", "group:devs"] } : real(id)) });
    await cache.get("personal");
    await cache.get("k");
    cache.evictPersons();
    expect(cache.peek("personal")).toBeUndefined();
    expect(cache.peek("k")?.value?.id).toBe("k");
  });

  it("counts hits and misses of known and unknown keys apart", async () => {
    const { lookup } = counted(["a"]);
    const cache = rightsCacheFactory({ ttlMs: 60_000, lookup });
    await cache.get("a");
    await cache.get("forged");
    cache.peek("a");
    cache.peek("a");
    cache.peek("forged");
    const { known, unknown } = cache.parts();
    expect([known.hits, known.misses, known.size]).toEqual([2, 2, 1]);
    expect([unknown.hits, unknown.misses, unknown.size, unknown.ttlMs]).toEqual([1, 1, 1, 10_000]);
  });
});
