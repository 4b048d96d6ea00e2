import { describe, expect, it } from "vitest";
import { leaseManagerFactory } from "./lease.js";

/** The lease table's rules in memory, on a clock the test moves. */
function fakeLeases() {
  let clock = 0;
  const rows = new Map<string, { holder: string; expires: number }>();
  let failRenew = false;
  return {
    advance: (ms: number) => (clock += ms),
    now: () => clock,
    rows,
    failRenewals: (v: boolean) => (failRenew = v),
    store: {
      async takeLease(name: string, holder: string, ttl: number) {
        const r = rows.get(name);
        if (r && r.expires > clock) return false;
        rows.set(name, { holder, expires: clock + ttl });
        return true;
      },
      async renewLease(name: string, holder: string, ttl: number) {
        if (failRenew) throw new Error("database unreachable");
        const r = rows.get(name);
        if (!r || r.holder !== holder || r.expires <= clock) return false;
        r.expires = clock + ttl;
        return true;
      },
      async dropLease(name: string, holder: string) {
        if (rows.get(name)?.holder === holder) rows.delete(name);
      },
    },
  };
}
const log = { warn: () => {} };

describe("walk leases", () => {
  it("one holder at a time; released, the next may take it", async () => {
    const f = fakeLeases();
    const a = leaseManagerFactory({ store: f.store, holder: "a", ttlMs: 30_000, log, now: f.now });
    const b = leaseManagerFactory({ store: f.store, holder: "b", ttlMs: 30_000, log, now: f.now });
    const la = await a.acquire("rebuild");
    expect(la).toBeDefined();
    expect(await b.acquire("rebuild")).toBeUndefined();
    expect(await b.acquire("retention")).toBeDefined();
    await la!.release();
    const lb = await b.acquire("rebuild");
    expect(lb).toBeDefined();
    await lb!.release();
  });

  it("a holder that died stops renewing, and its lease lapses for the others after its lifetime", async () => {
    const f = fakeLeases();
    const dead = leaseManagerFactory({ store: f.store, holder: "dead", ttlMs: 30_000, log, now: f.now });
    const live = leaseManagerFactory({ store: f.store, holder: "live", ttlMs: 30_000, log, now: f.now });
    const l = await dead.acquire("rebuild");
    f.advance(29_000);
    expect(await live.acquire("rebuild")).toBeUndefined();
    f.advance(2_000);
    expect(l!.lost()).toBe(true);
    const taken = await live.acquire("rebuild");
    expect(taken).toBeDefined();
    await taken!.release();
  });

  it("a holder that cannot renew for a whole lifetime considers its lease lost", async () => {
    const f = fakeLeases();
    const m = leaseManagerFactory({ store: f.store, holder: "a", ttlMs: 60, log, now: f.now });
    const l = await m.acquire("rebuild");
    f.failRenewals(true);
    expect(l!.lost()).toBe(false);
    f.advance(61);
    expect(l!.lost()).toBe(true);
    await l!.release();
  });

  it("renewal keeps a long walk's lease", async () => {
    const f = fakeLeases();
    const m = leaseManagerFactory({ store: f.store, holder: "a", ttlMs: 60, log, now: f.now });
    const l = await m.acquire("rebuild");
    for (let i = 0; i < 5; i++) {
      f.advance(20);
      // Wait (bounded) for the renewal timer to push the expiry past the moved clock.
      for (let n = 0; n < 200 && f.rows.get("rebuild")!.expires !== f.now() + 60; n++) await new Promise((r) => setTimeout(r, 5));
      expect(f.rows.get("rebuild")!.expires).toBe(f.now() + 60);
    }
    expect(l!.lost()).toBe(false);
    expect(f.rows.get("rebuild")?.holder).toBe("a");
    await l!.release();
    expect(f.rows.has("rebuild")).toBe(false);
  });
});
