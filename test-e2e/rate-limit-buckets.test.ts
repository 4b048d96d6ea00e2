// Who pays for a request: a made-up key never spends the tenant's allowance, a key of another
// tenant leaves no trace in Redis, and the administrator can always undo an override, however
// busy the tenant's bucket is.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeKey } from "@svc/keys";
import { startSuite, type Suite } from "./suite.js";

const MISSING = "/repository/default/none";

/** The Redis keys the suite's gateway has written (only the gateway uses Redis). */
async function redisKeys(url: string): Promise<string[]> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  try {
    await redis.connect();
    return (await redis.keys("*")).sort();
  } finally {
    redis.disconnect();
  }
}

/** A value of one sample in Prometheus text, summed over series matching every label given. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

describe("rate-limit buckets", () => {
  let s: Suite;
  beforeAll(async () => {
    // 10 a minute: a bucket of 10 refilled one every 6 s, small enough to empty on purpose.
    s = await startSuite({ env: { SVC_RATE_LIMIT: "10" } });
  });
  afterAll(() => s?.stop());

  it("charges made-up keys of the tenant to the keyless bucket: they never take the administrators' budget", async () => {
    const forged = await Promise.all(Array.from({ length: 40 }, () => s.call("GET", MISSING, { key: makeKey("default") }).then((r) => r.status)));
    // Refused as unknown while the keyless bucket lasts, then as too many.
    expect(forged.filter((st) => st !== 401 && st !== 429)).toEqual([]);
    expect(forged.filter((st) => st === 401).length).toBeGreaterThanOrEqual(10);
    expect(forged).toContain(429);
    // The tenant's bucket is untouched: the bootstrap key gets through, again and again.
    for (let i = 0; i < 5; i++) expect((await s.call("GET", MISSING, { key: s.bootstrapKey })).status).toBe(404);
    // A scrape gathers every process's meters over NATS; on a busy machine one may answer too
    // late for a scrape (its meters are then missing from it), so scrape until the gateway's are there.
    const refused = forged.filter((st) => st === 429).length;
    let metrics = "";
    for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 500))) {
      metrics = await (await s.call("GET", "/metrics", { key: s.bootstrapKey })).text();
      if (sample(metrics, "svc_gateway_rate_limited_total", { bucket: "anonymous" }) >= refused) break;
    }
    expect(sample(metrics, "svc_gateway_rate_limited_total", { bucket: "anonymous" })).toBeGreaterThanOrEqual(refused);
    expect(sample(metrics, "svc_gateway_rate_limited_total", { bucket: "tenant" })).toBe(0);
  });

  it("refuses a key of another tenant, or a malformed one, without writing a Redis key for it", async () => {
    const foreign = makeKey("othertenant");
    for (let i = 0; i < 3; i++) {
      expect([401, 429]).toContain((await s.call("GET", MISSING, { key: foreign })).status);
      expect([401, 429]).toContain((await s.call("GET", "/api/credentials", { headers: { authorization: `Bearer ${makeKey("elsewhere")}` } })).status);
      expect([401, 429]).toContain((await s.call("GET", MISSING, { key: `${s.bootstrapKey.slice(0, -2)}AA` })).status);
    }
    const keys = await redisKeys(s.redisUrl);
    expect(keys.filter((k) => /othertenant|elsewhere/.test(k))).toEqual([]);
    // Only the served tenant's own buckets exist, whatever the requests claimed.
    expect(keys.every((k) => ["svc:ratelimit:default", "svc:ratelimit:~anonymous:default", "svc:ratelimit:~reserve:default"].includes(k)), keys.join(", ")).toBe(true);
  });

  it("refuses an override for a tenant this deployment does not serve", async () => {
    const res = await s.call("PUT", "/api/rate-limits/othertenant", { key: s.bootstrapKey, body: { requestsPerMinute: 5 } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/serves tenant "default"/);
    const listed = (await (await s.call("GET", "/api/rate-limits", { key: s.bootstrapKey })).json()) as { tenants: unknown[] };
    expect(listed.tenants).toEqual([]);
  });

  it("lets the administrator undo an override while downloads keep the tenant's bucket empty", async () => {
    const ci = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect((await s.call("PUT", "/api/rate-limits/default", { key: s.bootstrapKey, body: { requestsPerMinute: 5 } })).status).toBe(200);

    // Busy builds: a few connections downloading for as long as the test runs.
    let running = true;
    const seen: number[] = [];
    const builds = Array.from({ length: 4 }, async () => {
      while (running) seen.push((await s.call("GET", MISSING, { key: ci.key })).status);
    });
    try {
      const end = Date.now() + 30_000;
      while (!seen.includes(429) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(seen).toContain(429);

      const listed = await s.call("GET", "/api/rate-limits", { key: s.bootstrapKey });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { tenants: unknown[] }).tenants).toEqual([{ tenant: "default", requestsPerMinute: 5 }]);
      expect((await s.call("DELETE", "/api/rate-limits/default", { key: s.bootstrapKey })).status).toBe(204);
    } finally {
      running = false;
      await Promise.all(builds);
    }
  });
});
