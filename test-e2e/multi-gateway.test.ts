import { describe, expect, it } from "vitest";
import { twoGateways } from "./two-gateways.js";

const get = (url: string, key: string) => fetch(`${url}/repository/default/shared.txt`, { headers: { "service-repository-key": key } });

describe("many gateways, one truth", () => {
  const ctx = twoGateways();

  it("a key revoked through gateway A is refused by gateway B on its next request", async () => {
    const { s, b } = ctx;
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(s.gatewayUrl, k.key)).status).toBe(200);
    expect((await get(b.url, k.key)).status).toBe(200); // now cached on B for five minutes
    expect((await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey })).status).toBe(204);
    expect((await get(b.url, k.key)).status).toBe(401);
  });

  it("a key narrowed through gateway A is narrowed on gateway B at once", async () => {
    const { s, b } = ctx;
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(b.url, k.key)).status).toBe(200);
    await s.call("DELETE", `/api/credentials/${k.id}/grants/*`, { key: s.bootstrapKey });
    expect((await get(b.url, k.key)).status).toBe(403);
  });
});


describe("many gateways with the events lost", () => {
  const ctx = twoGateways({ ownNats: "ttl3s", env: { SVC_CACHE_TTL: "3s" } });

  it("with NATS down a revoked key still stops working everywhere within svc.cache.ttl", async () => {
    const k = await ctx.s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(ctx.b.url, k.key)).status).toBe(200);
    await ctx.infra.stopServer("nats");
    try {
      expect((await ctx.s.call("DELETE", `/api/credentials/${k.id}`, { key: ctx.s.bootstrapKey })).status).toBe(204);
      expect((await get(ctx.s.gatewayUrl, k.key)).status).toBe(401); // the changing node: at once
      expect((await get(ctx.b.url, k.key)).status).toBe(200); // B has not heard: it serves from its cache
      await new Promise((r) => setTimeout(r, 3500));
      expect((await get(ctx.b.url, k.key)).status).toBe(401); // the cache entry outlived its TTL
    } finally {
      await ctx.infra.startServer("nats");
    }
  });
});

describe("many gateways with the credential cache off (svc.cache.ttl=0)", () => {
  const ctx = twoGateways({ ownNats: "ttl0", env: { SVC_CACHE_TTL: "0" } });

  it("every gateway asks afresh, so a revocation holds everywhere at once even with NATS down", async () => {
    const k = await ctx.s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(ctx.b.url, k.key)).status).toBe(200);
    await ctx.infra.stopServer("nats");
    try {
      expect((await ctx.s.call("DELETE", `/api/credentials/${k.id}`, { key: ctx.s.bootstrapKey })).status).toBe(204);
      expect((await get(ctx.b.url, k.key)).status).toBe(401);
    } finally {
      await ctx.infra.startServer("nats");
    }
  });
});
