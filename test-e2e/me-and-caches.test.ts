// Who am I (GET /api/me) and the gateway node's own read caches (GET /api/caches, POST
// /api/caches/clear), through the gateway, with a second gateway for what a clear tells the others.
import type { CachesView } from "@svc/contracts";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { twoGateways } from "./two-gateways.js";

const settled = { timeout: 15_000, interval: 100 };

describe("who am I, and the caches of the gateway node that answers", () => {
  const ctx = twoGateways();
  const read = (base: string, key: string) => fetch(`${base}/repository/default/shared.txt`, { headers: { "service-repository-key": key } });
  const caches = async (base: string, key: string) => {
    const res = await fetch(`${base}/api/caches`, { headers: { "service-repository-key": key } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as CachesView;
    return { ...body, byName: (name: string) => body.caches.find((c) => c.name === name)! };
  };
  const clear = (base: string, key: string) => fetch(`${base}/api/caches/clear`, { method: "POST", headers: { "service-repository-key": key } });

  it("answers a key with its id, label and grants, whatever it holds", async () => {
    const k = await ctx.s.mint({ label: "ci deploys", grants: [{ scope: "default:libs", tokens: ["deploy"] }] });
    const res = await ctx.s.call("GET", "/api/me", { key: k.key });
    expect(res.status).toBe(200);
    const me = (await res.json()) as Record<string, unknown>;
    expect(me).toEqual({
      kind: "key",
      id: k.id,
      tenant: "default",
      label: "ci deploys",
      grants: [{ scope: "default:libs", tokens: expect.arrayContaining(["repository:read", "repository:write"]), expires: null, via: "key" }],
    });
    const bare = await ctx.s.mint();
    expect(await (await ctx.s.call("GET", "/api/me", { key: bare.key })).json()).toMatchObject({ kind: "key", id: bare.id, grants: [] });
  });

  it("refuses an anonymous caller with 401, and a revoked key", async () => {
    const res = await ctx.s.call("GET", "/api/me");
    expect(res.status).toBe(401);
    const k = await ctx.s.mint();
    await ctx.s.call("DELETE", `/api/credentials/${k.id}`, { key: ctx.s.bootstrapKey });
    expect((await ctx.s.call("GET", "/api/me", { key: k.key })).status).toBe(401);
  });

  it("lists each read cache with its time to live, hits, misses and size; a used key grows the credential cache and its uses count as hits", async () => {
    const admin = ctx.s.bootstrapKey;
    const before = await caches(ctx.s.gatewayUrl, admin);
    expect(before.node).toEqual(expect.any(String));
    expect(before.caches.map((c) => c.name)).toEqual(expect.arrayContaining(["credentials", "unknown-keys", "sessions", "rate-limit-overrides"]));
    for (const c of before.caches) expect(c).toEqual({ name: expect.any(String), description: expect.any(String), ttlSeconds: expect.any(Number), hits: expect.any(Number), misses: expect.any(Number), size: expect.any(Number) });
    expect(before.byName("credentials").ttlSeconds).toBe(300);

    const k = await ctx.s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    for (let i = 0; i < 3; i++) expect((await read(ctx.s.gatewayUrl, k.key)).status).toBe(200);
    const after = await caches(ctx.s.gatewayUrl, admin);
    expect(after.byName("credentials").size).toBeGreaterThan(before.byName("credentials").size);
    expect(after.byName("credentials").misses).toBeGreaterThan(before.byName("credentials").misses);
    // The key's second and third uses, and the admin's own listing, were answered from memory.
    expect(after.byName("credentials").hits).toBeGreaterThanOrEqual(before.byName("credentials").hits + 3);
  });

  it("needs manage:read to list and manage:write to clear", async () => {
    const reader = await ctx.s.mint({ grants: [{ scope: "*", tokens: ["manage:read"] }] });
    const deploy = await ctx.s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect((await fetch(`${ctx.s.gatewayUrl}/api/caches`)).status).toBe(401);
    expect((await fetch(`${ctx.s.gatewayUrl}/api/caches`, { headers: { "service-repository-key": deploy.key } })).status).toBe(403);
    expect((await fetch(`${ctx.s.gatewayUrl}/api/caches`, { headers: { "service-repository-key": reader.key } })).status).toBe(200);
    const refused = await clear(ctx.s.gatewayUrl, reader.key);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/manage:write/);
  });

  it("clear empties this node's caches, and tells the other gateway to re-read credentials: a key revoked without an announcement stops working there", async () => {
    const admin = ctx.s.bootstrapKey;
    const k = await ctx.s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await read(ctx.b.url, k.key)).status).toBe(200); // B remembers the key for svc.cache.ttl
    // Revoked behind the services' backs: no announcement, as when NATS lost one.
    const db = new pg.Client({ connectionString: ctx.s.databaseUrl });
    await db.connect();
    try {
      await db.query("update auth.credentials set revoked_at = now() where id = $1", [k.id]);
    } finally {
      await db.end();
    }
    expect((await read(ctx.b.url, k.key)).status).toBe(200); // B still serves it from memory

    const res = await clear(ctx.s.gatewayUrl, admin);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ cleared: expect.arrayContaining(["credentials", "sessions"]), announced: true });
    // This node: empty, but for the administrator's own key, looked up again to list them.
    const here = await caches(ctx.s.gatewayUrl, admin);
    expect(here.byName("credentials").size).toBe(1);
    expect(here.byName("unknown-keys").size).toBe(0);

    // The other node hears it over NATS and re-reads the key on its next use.
    await vi.waitUntil(async () => (await read(ctx.b.url, k.key)).status === 401, settled);
  });
});
