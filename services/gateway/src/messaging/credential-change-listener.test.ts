import { describe, expect, it } from "vitest";
import type { CredentialChanged, KeyResolution } from "@svc/contracts";
import { compileResolution, rightsCacheFactory } from "../domain/rights-cache.js";
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
  const cache = rightsCacheFactory({ ttlMs: 300_000, lookup: async (key) => compileResolution(resolve(key)) });
  let hear: (event: CredentialChanged) => void = () => {};
  gatewayListenersFactory({
    bus: { subscribe: ((_kind: string, handler: (e: CredentialChanged) => void) => (hear = handler)) as never, listen: () => {} },
    internalSecret: "s",
    cache,
    metrics: { eventLag: { observe: () => {} } as never },
    refreshLimits: () => {},
  });
  const announce = (subject: CredentialChanged["subject"], change: CredentialChanged["change"], affected?: string[]) =>
    hear({ id: "e", time: new Date().toISOString(), tenant: "acme", subject, change, ...(affected ? { affected } : {}) });
  const cached = (key: string) => cache.peek(key) !== undefined;
  return { cache, announce, cached };
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
