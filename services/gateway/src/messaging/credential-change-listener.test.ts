import { describe, expect, it } from "vitest";
import type { CredentialChanged, KeyResolution } from "@svc/contracts";
import { controlSubjects } from "@svc/kit";
import { compilePerson, compileResolution, personEntry, rightsCacheFactory } from "../domain/rights-cache.js";
import { sessionCacheFactory } from "../domain/session-cache.js";
import { gatewayListenersFactory } from "./credential-change-listener.js";

const id = (n: number) => n.toString(16).padStart(64, "0");

/** Resolutions as the auth service would answer them, some depending on a person or group. */
function resolutions(extra: Record<string, KeyResolution["dependsOn"]>) {
  return (key: string): KeyResolution => ({
    id: key,
    tenant: "acme",
    state: "active",
    expires: null,
    allowedAddresses: [],
    grants: [{ scope: "*", tokens: ["repository:read"], expires: null }],
    ...(extra[key] ? { dependsOn: extra[key] } : {}),
  });
}

function setup(dependsOn: Record<string, KeyResolution["dependsOn"]> = {}) {
  const resolve = resolutions(dependsOn);
  // A person's entry: their own grants and the groups named in `dependsOn` (as auth resolves it).
  const person = (id: string) =>
    compilePerson({ id, tenant: "acme", grants: [], dependsOn: [{ kind: "person", id }, ...(dependsOn[id] ?? []).filter((d) => d.kind === "group")] });
  const cache = rightsCacheFactory({ ttlMs: 300_000, lookup: async (key) => (key.startsWith("person:") ? person(key.slice(7)) : compileResolution(resolve(key))) });
  const sessions = sessionCacheFactory({ ttlMs: 60_000, lookup: async (id) => ({ id, tenant: "acme", personId: "oidc/alice", expiresAt: Date.now() + 3_600_000, csrf: "t" }) });
  let hear: (event: CredentialChanged) => void = () => {};
  const control = new Map<string, (message: unknown) => void>();
  gatewayListenersFactory({
    bus: { subscribe: ((_kind: string, handler: (e: CredentialChanged) => void) => (hear = handler)) as never, listen: (subject, handler) => void control.set(subject, handler) },
    internalSecret: "s",
    cache,
    sessions,
    node: "gw-1",
    metrics: { eventLag: { observe: () => {} } as never },
    refreshLimits: () => {},
  });
  const announce = (subject: CredentialChanged["subject"], change: CredentialChanged["change"], affected?: string[]) =>
    hear({ id: "e", time: new Date().toISOString(), tenant: "acme", subject, change, ...(affected ? { affected } : {}) });
  const cached = (key: string) => cache.peek(key) !== undefined;
  const cleared = (node: string) => control.get(controlSubjects("s").caches)!({ node });
  return { cache, sessions, announce, cached, cleared };
}

describe("a credential change drops only what it touches from this gateway's cache", () => {
  it("a group or person change leaves every key that does not depend on it cached (5,000 keys)", async () => {
    const { cache, announce, cached } = setup();
    for (let n = 0; n < 5_000; n++) await cache.get(id(n));
    announce({ kind: "group", id: "ops" }, "grants");
    announce({ kind: "group", id: "ops" }, "members", ["oidc/alice"]);
    announce({ kind: "group", id: "ops" }, "removed");
    announce({ kind: "person", id: "oidc/alice" }, "removed");
    expect(cache.stats().size).toBe(5_000);
    expect(cached(id(0)) && cached(id(4_999))).toBe(true);
  });

  it("drops the keys whose rights come from the changed group or person, at once", async () => {
    const viaGroup = id(1);
    const viaPerson = id(2);
    const unrelated = id(3);
    const { cache, announce, cached } = setup({
      [viaGroup]: [{ kind: "group", id: "ops" }],
      [viaPerson]: [{ kind: "person", id: "oidc/alice" }, { kind: "group", id: "dev" }],
    });
    const fill = async () => {
      for (const k of [viaGroup, viaPerson, unrelated]) await cache.get(k);
    };
    await fill();
    announce({ kind: "group", id: "ops" }, "grants");
    expect([cached(viaGroup), cached(viaPerson), cached(unrelated)]).toEqual([false, true, true]);

    await fill();
    announce({ kind: "group", id: "dev" }, "removed");
    expect([cached(viaGroup), cached(viaPerson), cached(unrelated)]).toEqual([true, false, true]);

    await fill();
    // Alice joins a group her key did not depend on yet: her set of groups changed.
    announce({ kind: "group", id: "release" }, "members", ["oidc/alice"]);
    expect([cached(viaGroup), cached(viaPerson), cached(unrelated)]).toEqual([true, false, true]);

    await fill();
    announce({ kind: "key", id: unrelated }, "revoked");
    expect([cached(viaGroup), cached(viaPerson), cached(unrelated)]).toEqual([true, true, false]);
  });

  it("forgets a dependency once its key has left the cache", async () => {
    const key = id(7);
    const { cache, announce, cached } = setup({ [key]: [{ kind: "group", id: "ops" }] });
    await cache.get(key);
    cache.evict(key);
    expect(cache.evictDependents({ kind: "group", id: "ops" })).toBe(0);
    await cache.get(key);
    announce({ kind: "group", id: "ops" }, "grants");
    expect(cached(key)).toBe(false);
  });
});

describe("a signed-in person's rights and sessions leave this gateway's caches when they change", () => {
  it("drops a person's rights when the person, or one of their groups, changes", async () => {
    const alice = personEntry("oidc/alice");
    const { cache, announce, cached } = setup({ "oidc/alice": [{ kind: "group", id: "ops" }] });
    await cache.get(alice);
    announce({ kind: "group", id: "dev" }, "grants");
    expect(cached(alice)).toBe(true);
    announce({ kind: "person", id: "oidc/alice" }, "grants");
    expect(cached(alice)).toBe(false);
    await cache.get(alice);
    announce({ kind: "group", id: "ops" }, "removed");
    expect(cached(alice)).toBe(false);
    await cache.get(alice);
    // Alice joins a group she did not belong to: her set of groups changed.
    announce({ kind: "group", id: "release" }, "members", ["oidc/alice"]);
    expect(cached(alice)).toBe(false);
  });

  it("forgets a session the console announces ended, and no other", async () => {
    const { sessions, announce } = setup();
    await sessions.get("s1");
    await sessions.get("s2");
    announce({ kind: "session", id: "s1" }, "ended");
    expect(sessions.peek("s1")).toBeUndefined();
    expect(sessions.peek("s2")?.value?.personId).toBe("oidc/alice");
  });

  it("drops every credential, person and session when another gateway clears its caches, and not on its own announcement", async () => {
    const { cache, sessions, cached, cleared } = setup();
    await cache.get(id(1));
    await cache.get(personEntry("oidc/alice"));
    await sessions.get("s1");
    cleared("gw-1");
    expect(cached(id(1))).toBe(true);
    cleared("gw-2");
    expect([cached(id(1)), cached(personEntry("oidc/alice")), sessions.peek("s1")]).toEqual([false, false, undefined]);
  });
});
