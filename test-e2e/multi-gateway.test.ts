import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startInfra, type Infra } from "@svc/infra";
import { startSuite, type Suite } from "./suite.js";

const get = (url: string, key: string) => fetch(`${url}/repository/default/shared.txt`, { headers: { "service-repository-key": key } });

describe("many gateways, one truth", () => {
  let s: Suite;
  let b: Awaited<ReturnType<Suite["startGateway"]>>;
  beforeAll(async () => {
    s = await startSuite();
    b = await s.startGateway();
    await s.call("PUT", "/repository/default/shared.txt", { key: s.bootstrapKey, body: "shared" });
  });
  afterAll(async () => {
    await b?.stop();
    await s?.stop();
  });

  it("a key revoked through gateway A is refused by gateway B on its next request", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(s.gatewayUrl, k.key)).status).toBe(200);
    expect((await get(b.url, k.key)).status).toBe(200); // now cached on B for five minutes
    expect((await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey })).status).toBe(204);
    expect((await get(b.url, k.key)).status).toBe(401);
  });

  it("a key narrowed through gateway A is narrowed on gateway B at once", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(b.url, k.key)).status).toBe(200);
    await s.call("DELETE", `/api/credentials/${k.id}/grants/*`, { key: s.bootstrapKey });
    expect((await get(b.url, k.key)).status).toBe(403);
  });
});

describe("many gateways with the events lost", () => {
  let infra: Infra;
  let s: Suite;
  let b: Awaited<ReturnType<Suite["startGateway"]>>;
  beforeAll(async () => {
    // A NATS of this test's own, so stopping it disturbs no other test.
    const dir = join(inject("dataDir"), `nats-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    infra = await startInfra({ dataDir: dir, log: () => {}, env: { SVC_DATABASE_URL: inject("adminDatabaseUrl"), SVC_REDIS_URL: inject("redisUrl") } });
    s = await startSuite({ env: { SVC_CACHE_TTL: "3s", SVC_NATS_URL: infra.natsUrl } });
    b = await s.startGateway();
    await s.call("PUT", "/repository/default/shared.txt", { key: s.bootstrapKey, body: "shared" });
  });
  afterAll(async () => {
    await b?.stop();
    await s?.stop();
    await infra?.stop();
  });

  it("with NATS down a revoked key still stops working everywhere within svc.cache.ttl", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(b.url, k.key)).status).toBe(200);
    await infra.stopServer("nats");
    try {
      expect((await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey })).status).toBe(204);
      expect((await get(s.gatewayUrl, k.key)).status).toBe(401); // the changing node: at once
      expect((await get(b.url, k.key)).status).toBe(200); // B has not heard: it serves from its cache
      await new Promise((r) => setTimeout(r, 3500));
      expect((await get(b.url, k.key)).status).toBe(401); // the cache entry outlived its TTL
    } finally {
      await infra.startServer("nats");
    }
  });
});

describe("many gateways with the credential cache off (svc.cache.ttl=0)", () => {
  let infra: Infra;
  let s: Suite;
  let b: Awaited<ReturnType<Suite["startGateway"]>>;
  beforeAll(async () => {
    const dir = join(inject("dataDir"), `nats-ttl0-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    infra = await startInfra({ dataDir: dir, log: () => {}, env: { SVC_DATABASE_URL: inject("adminDatabaseUrl"), SVC_REDIS_URL: inject("redisUrl") } });
    s = await startSuite({ env: { SVC_CACHE_TTL: "0", SVC_NATS_URL: infra.natsUrl } });
    b = await s.startGateway();
    await s.call("PUT", "/repository/default/shared.txt", { key: s.bootstrapKey, body: "shared" });
  });
  afterAll(async () => {
    await b?.stop();
    await s?.stop();
    await infra?.stop();
  });

  it("every gateway asks afresh, so a revocation holds everywhere at once even with NATS down", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(b.url, k.key)).status).toBe(200);
    await infra.stopServer("nats");
    try {
      expect((await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey })).status).toBe(204);
      expect((await get(b.url, k.key)).status).toBe(401);
    } finally {
      await infra.startServer("nats");
    }
  });
});
