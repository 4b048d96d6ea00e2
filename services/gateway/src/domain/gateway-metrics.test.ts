import { describe, expect, it } from "vitest";
import { createMetrics } from "@svc/kit";
import { gatewayMetricsFactory } from "./gateway-metrics.js";
import { rightsCacheFactory } from "./rights-cache.js";
import { sessionCacheFactory } from "./session-cache.js";

const sample = (text: string, name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1]);

describe("the gateway's cache meters", () => {
  it("count console sessions found in the cache and asked of the console, and hold the entries", async () => {
    const m = createMetrics("gateway");
    const keys = rightsCacheFactory({ ttlMs: 60_000, lookup: async () => null });
    const sessions = sessionCacheFactory({ ttlMs: 60_000, lookup: async (id) => ({ id, tenant: "default", personId: "dev/admin", csrf: "c", expiresAt: Date.now() + 60_000 }) });
    gatewayMetricsFactory(m, keys, sessions);
    // As admission asks: the cache first, the console on a miss.
    const admit = async (id: string) => sessions.peek(id) ?? (await sessions.get(id));
    await admit("s1");
    await admit("s1");
    await admit("s2");
    const text = await m.registry.metrics();
    expect(sample(text, "svc_gateway_session_cache_misses_total")).toBe(2);
    expect(sample(text, "svc_gateway_session_cache_hits_total")).toBe(1);
    expect(sample(text, "svc_gateway_session_cache_entries")).toBe(2);
    // Scraped again: the counters do not count twice.
    await admit("s2");
    const again = await m.registry.metrics();
    expect(sample(again, "svc_gateway_session_cache_hits_total")).toBe(2);
    expect(sample(again, "svc_gateway_key_cache_hits_total")).toBe(0);
  });
});
