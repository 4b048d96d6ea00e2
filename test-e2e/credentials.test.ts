import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

type Credential = { id: string; label: string | null; expires: string | null; state: string; allowedAddresses: string[]; grants: { scope: string }[]; lastUsed?: string | null; lastUsedFrom?: string | null; useCount?: number };

const days = (iso: string | null, from = Date.now()) => (iso === null ? null : Math.round((Date.parse(iso) - from) / 86_400_000));

describe("credentials: paging, expiry, allowlists, rotation, usage", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_TRACK_KEY_USAGE: "true", SVC_TRUSTED_PROXIES: "127.0.0.1, ::1" } });
  });
  afterAll(() => s?.stop());

  const list = async (query: string) => {
    const res = await s.call("GET", `/api/credentials${query}`, { key: s.bootstrapKey });
    return { res, items: res.status === 200 ? ((await res.json()) as Credential[]) : [] };
  };

  it("pages through every key exactly once in id order, even while keys are minted", async () => {
    for (let i = 0; i < 7; i++) await s.mint({ label: `page-${i}` });
    const all = (await list("")).items.map((c) => c.id);
    expect(all).toEqual([...all].sort());
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const { res, items } = await list(`?limit=3${cursor ? `&after=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(items.length).toBeLessThanOrEqual(3);
      seen.push(...items.map((c) => c.id));
      cursor = res.headers.get("x-next-cursor");
      pages++;
      if (pages === 1) await s.mint({ label: "minted-mid-walk" });
    } while (cursor);
    expect(pages).toBeGreaterThan(2);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of all) expect(seen).toContain(id);
  });

  it("sends no cursor on the last page", async () => {
    const { res } = await list("?limit=500");
    expect(res.headers.get("x-next-cursor")).toBeNull();
  });

  it("refuses a limit that is not a whole number from 1 to 500", async () => {
    for (const bad of ["501", "0", "-1", "abc", "2.5", ""]) {
      const { res } = await list(`?limit=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { field: string }).field).toBe("limit");
    }
  });

  it("changes a key's expiry and clears it with a blank value", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    const set = await s.call("PUT", `/api/credentials/${k.id}/expiry`, { key: s.bootstrapKey, body: { expires: "P3D" } });
    expect(set.status).toBe(200);
    expect(days(((await set.json()) as Credential).expires)).toBe(3);
    const cleared = await s.call("PUT", `/api/credentials/${k.id}/expiry`, { key: s.bootstrapKey, body: { expires: "" } });
    expect(((await cleared.json()) as Credential).expires).toBeNull();
    const bad = await s.call("PUT", `/api/credentials/${k.id}/expiry`, { key: s.bootstrapKey, body: { expires: "yesterday" } });
    expect(bad.status).toBe(400);
    expect((await list("")).items.find((c) => c.id === k.id)?.expires).toBeNull();
  });

  it("an expiry moved to the near future takes effect on the next request", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await s.call("GET", "/repository/default/none", { key: k.key })).status).toBe(404);
    await s.call("PUT", `/api/credentials/${k.id}/expiry`, { key: s.bootstrapKey, body: { expires: "PT1S" } });
    await new Promise((r) => setTimeout(r, 1300));
    expect((await s.call("GET", "/repository/default/none", { key: k.key })).status).toBe(401);
  });

  it("restricts a key to source addresses, read through trusted proxies", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    const from = (addr: string) => s.call("GET", "/repository/default/none", { key: k.key, headers: { "x-forwarded-for": addr } });
    const set = await s.call("PUT", `/api/credentials/${k.id}/allowed-ips`, { key: s.bootstrapKey, body: { addresses: "10.1.0.0/16, 2001:db8::7" } });
    expect(set.status).toBe(200);
    expect(((await set.json()) as Credential).allowedAddresses).toEqual(["10.1.0.0/16", "2001:db8::7"]);
    expect((await from("10.1.200.3")).status).toBe(404);
    expect((await from("2001:db8::7")).status).toBe(404);
    const refused = await from("10.2.0.1");
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/may not be used from 10\.2\.0\.1/);
    expect((await s.call("GET", "/repository/default/none", { key: k.key })).status).toBe(403);

    const bad = await s.call("PUT", `/api/credentials/${k.id}/allowed-ips`, { key: s.bootstrapKey, body: { addresses: "10.1.0.0/16, 10.0.0.0/40" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { field: string }).field).toBe("addresses");
    expect((await from("10.1.0.9")).status).toBe(404);

    await s.call("PUT", `/api/credentials/${k.id}/allowed-ips`, { key: s.bootstrapKey, body: { addresses: "" } });
    expect((await from("10.2.0.1")).status).toBe(404);
  });

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", async () => {
    const other = await s.startGateway({ SVC_TRUSTED_PROXIES: "" });
    try {
      const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
      await s.call("PUT", `/api/credentials/${k.id}/allowed-ips`, { key: s.bootstrapKey, body: { addresses: "10.1.0.0/16" } });
      const res = await fetch(`${other.url}/repository/default/none`, { headers: { "service-repository-key": k.key, "x-forwarded-for": "10.1.0.5" } });
      expect(res.status).toBe(403);
    } finally {
      await other.stop();
    }
  });

  it("rotates a key: the successor inherits grants and allowlist, the old one lasts for the overlap", async () => {
    const old = await s.mint({ label: "rotating", grants: [{ scope: "*", tokens: ["repository:read"] }, { scope: "default:x", tokens: ["deploy"] }] });
    await s.call("PUT", `/api/credentials/${old.id}/allowed-ips`, { key: s.bootstrapKey, body: { addresses: "127.0.0.1, ::1, 10.9.0.0/16" } });
    const res = await s.call("POST", `/api/credentials/${old.id}/rotate`, { key: s.bootstrapKey, body: { overlap: "PT2S" } });
    expect(res.status).toBe(201);
    const next = (await res.json()) as { id: string; key: string; expires: string; label: string; predecessor: { id: string; expires: string } };
    expect(next.key).toMatch(/^svck_default\./);
    expect(next.label).toBe("rotating");
    expect(days(next.expires)).toBe(90);
    expect(next.predecessor.id).toBe(old.id);
    expect(Date.parse(next.predecessor.expires) - Date.now()).toBeLessThanOrEqual(2000);

    const listed = (await list("")).items;
    const succ = listed.find((c) => c.id === next.id)!;
    expect(succ.grants.map((g) => g.scope).sort()).toEqual(["*", "default:x"]);
    expect(succ.allowedAddresses).toEqual(["127.0.0.1", "::1", "10.9.0.0/16"]);

    expect((await s.call("GET", "/repository/default/none", { key: old.key })).status).toBe(404);
    expect((await s.call("GET", "/repository/default/none", { key: next.key })).status).toBe(404);
    await new Promise((r) => setTimeout(r, 2300));
    expect((await s.call("GET", "/repository/default/none", { key: old.key })).status).toBe(401);
    expect((await s.call("GET", "/repository/default/none", { key: next.key })).status).toBe(404);
  });

  it("rotates with a seven-day overlap by default and refuses a revoked key", async () => {
    const k = await s.mint();
    const r = (await (await s.call("POST", `/api/credentials/${k.id}/rotate`, { key: s.bootstrapKey })).json()) as { predecessor: { expires: string } };
    expect(days(r.predecessor.expires)).toBe(7);
    await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey });
    expect((await s.call("POST", `/api/credentials/${k.id}/rotate`, { key: s.bootstrapKey, body: {} })).status).toBe(409);
    expect((await s.call("POST", `/api/credentials/${"a".repeat(64)}/rotate`, { key: s.bootstrapKey, body: {} })).status).toBe(404);
    expect((await s.call("POST", `/api/credentials/${k.id}/rotate`, { key: s.bootstrapKey, body: { overlap: "a week" } })).status).toBe(400);
  });

  it("shows last use, address and count while usage tracking is on", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    const fresh = (await list("")).items.find((c) => c.id === k.id)!;
    expect(fresh.useCount).toBe(0);
    expect(fresh.lastUsed).toBeNull();
    for (let i = 0; i < 3; i++) await s.call("GET", "/repository/default/none", { key: k.key, headers: { "x-forwarded-for": "192.0.2.44" } });
    let seen: Credential | undefined;
    for (let i = 0; i < 40; i++) {
      seen = (await list("")).items.find((c) => c.id === k.id);
      if (seen?.useCount === 3) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(seen?.useCount).toBe(3);
    expect(seen?.lastUsedFrom).toBe("192.0.2.44");
    expect(Date.now() - Date.parse(seen!.lastUsed!)).toBeLessThan(60_000);
  });
});

describe("credential lifetimes", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_CREDENTIAL_DEFAULT_LIFETIME: "P10D", SVC_CREDENTIAL_MAX_LIFETIME: "P30D" } });
  });
  afterAll(() => s?.stop());

  const mint = async (body: object) => {
    const res = await s.call("POST", "/api/credentials", { key: s.bootstrapKey, body });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; expires: string | null };
  };

  it("uses the configured default lifetime", async () => {
    expect(days((await mint({})).expires)).toBe(10);
  });

  it("pulls a longer request back to the cap and says so", async () => {
    expect(days((await mint({ expires: "P60D" })).expires)).toBe(30);
    expect(days((await mint({ expires: "2099-01-01T00:00:00Z" })).expires)).toBe(30);
    expect(days((await mint({ expires: "P20D" })).expires)).toBe(20);
  });

  it("caps a non-expiring key and a cleared expiry too", async () => {
    const n = await mint({ nonExpiring: true });
    expect(days(n.expires)).toBe(30);
    const k = await mint({ expires: "P2D" });
    const cleared = (await (await s.call("PUT", `/api/credentials/${k.id}/expiry`, { key: s.bootstrapKey, body: { expires: null } })).json()) as { expires: string };
    expect(days(cleared.expires)).toBe(30);
  });

  it("leaves the bootstrap key non-expiring", async () => {
    const list = (await (await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).json()) as { label: string; expires: string | null }[];
    expect(list.find((c) => c.label === "bootstrap key")?.expires).toBeNull();
  });
});
