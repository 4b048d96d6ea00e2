// What a gateway remembers of console sessions: briefly, never past a session's end, and
// nothing at all once the console says the session ended.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { csrfMatches, readSessionId, sessionCacheFactory, type Session } from "./session-cache.js";

const session = (id: string, expiresAt: number): Session => ({ id, tenant: "default", personId: "oidc/alice", expiresAt, csrf: "token-1234" });

function counted(answers: Map<string, Session>) {
  const asked: string[] = [];
  return { asked, lookup: async (id: string) => (asked.push(id), answers.get(id) ?? null) };
}

describe("session cache", () => {
  it("asks the console once for a session used many times", async () => {
    const { asked, lookup } = counted(new Map([["s", session("s", Date.now() + 3_600_000)]]));
    const cache = sessionCacheFactory({ ttlMs: 60_000, lookup });
    await Promise.all(Array.from({ length: 20 }, () => cache.get("s")));
    for (let i = 0; i < 20; i++) expect(cache.peek("s")?.value?.personId).toBe("oidc/alice");
    expect(asked).toEqual(["s"]);
    expect(cache.stats()).toMatchObject({ hits: 20, size: 1 });
  });

  it("never keeps a session past its end, even within the time to live", async () => {
    let now = 1_000_000;
    const { asked, lookup } = counted(new Map([["s", session("s", 1_000_500)]]));
    const cache = sessionCacheFactory({ ttlMs: 60_000, lookup, now: () => now });
    expect((await cache.get("s"))?.id).toBe("s");
    now = 1_000_501;
    expect(cache.peek("s")).toEqual({ value: null });
    expect(await cache.get("s")).toBeNull();
    expect(asked).toEqual(["s", "s"]);
  });

  it("remembers an unknown session briefly, like an unknown key", async () => {
    // The cache's own clock times entries: a second is room enough for a loaded machine between the lookups and the first look.
    const { asked, lookup } = counted(new Map());
    const cache = sessionCacheFactory({ ttlMs: 60_000, negativeTtlMs: 1000, lookup });
    await Promise.all(Array.from({ length: 10 }, () => cache.get("forged")));
    expect(cache.peek("forged")).toEqual({ value: null });
    await new Promise((r) => setTimeout(r, 1100));
    expect(cache.peek("forged")).toBeUndefined();
    expect(asked).toEqual(["forged"]);
  });

  it("forgets an ended session at once, even one whose lookup was under way", async () => {
    const answers = new Map([["s", session("s", Date.now() + 3_600_000)]]);
    const { lookup } = counted(answers);
    const cache = sessionCacheFactory({ ttlMs: 60_000, lookup });
    await cache.get("s");
    answers.delete("s");
    const racing = cache.get("other");
    cache.evict("s");
    await racing;
    expect(cache.peek("s")).toBeUndefined();
    expect(await cache.get("s")).toBeNull();
  });

  it("remembers nothing when the cache is off", async () => {
    const { asked, lookup } = counted(new Map([["s", session("s", Date.now() + 3_600_000)]]));
    const cache = sessionCacheFactory({ ttlMs: 0, lookup });
    await cache.get("s");
    expect(cache.peek("s")).toBeUndefined();
    await cache.get("s");
    expect(asked).toEqual(["s", "s"]);
  });
});

describe("the session cookie", () => {
  const value = "A".repeat(43);
  const id = createHash("sha256").update(value).digest("hex");

  it("is read by the SHA-256 of its value, among other cookies", () => {
    expect(readSessionId(`theme=dark; svc_session=${value}; x=1`)).toBe(id);
    expect(readSessionId(["a=1", `svc_session=${value}`])).toBe(id);
  });

  it("is absent, or a value the console cannot have set", () => {
    expect(readSessionId(undefined)).toBeUndefined();
    expect(readSessionId("other_svc_session=1; theme=dark")).toBeUndefined();
    expect(readSessionId("svc_session=short")).toBe("");
    expect(readSessionId(`svc_session=${"A".repeat(42)}!`)).toBe("");
  });

  it("carries its anti-forgery token only as the exact header value", () => {
    const s = session("s", Infinity);
    expect(csrfMatches(s, "token-1234")).toBe(true);
    for (const wrong of [undefined, "", "token-123", "token-12345", ["token-1234"]]) expect(csrfMatches(s, wrong)).toBe(false);
  });
});
