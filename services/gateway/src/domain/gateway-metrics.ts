import { Counter, Gauge, Histogram } from "prom-client";
import type { ServiceMetrics } from "@svc/kit";
import type { RightsCache } from "./rights-cache.js";

/** What a cache tells its meters: counts on its own hot path, read when scraped. */
interface CountingCache {
  stats(): { hits: number; misses: number; size: number };
}

/** Entries, hits and misses of one cache as `svc_gateway_<name>_cache_*`; the counters catch up when scraped. */
function cacheMeters(registers: ServiceMetrics["registry"][], name: string, cache: CountingCache, what: { entries: string; hits: string; misses: string }) {
  new Gauge({
    name: `svc_gateway_${name}_cache_entries`,
    help: what.entries,
    registers,
    collect() {
      this.set(cache.stats().size);
    },
  });
  let hits = 0;
  let misses = 0;
  new Counter({
    name: `svc_gateway_${name}_cache_hits_total`,
    help: what.hits,
    registers,
    collect() {
      const now = cache.stats().hits;
      this.inc(now - hits);
      hits = now;
    },
  });
  new Counter({
    name: `svc_gateway_${name}_cache_misses_total`,
    help: what.misses,
    registers,
    collect() {
      const now = cache.stats().misses;
      this.inc(now - misses);
      misses = now;
    },
  });
}

/** The gateway's own meters, beside the HTTP ones every service has. */
export function gatewayMetricsFactory(m: ServiceMetrics, cache: RightsCache, sessions?: CountingCache) {
  const registers = [m.registry];
  cacheMeters(registers, "key", cache, {
    entries: "Keys whose rights this gateway holds in its cache",
    hits: "Requests whose key was decided from the cache",
    misses: "Requests whose key had to be looked up in the auth service",
  });
  if (sessions) {
    cacheMeters(registers, "session", sessions, {
      entries: "Console sessions this gateway holds in its cache",
      hits: "Requests whose console session was found in the cache",
      misses: "Requests whose console session had to be asked of the console service",
    });
  }
  return {
    rateLimited: new Counter({ name: "svc_gateway_rate_limited_total", help: "Requests refused with 429, by bucket", labelNames: ["bucket"] as const, registers }),
    rateLimitDegraded: new Counter({
      name: "svc_gateway_rate_limit_unenforced_total",
      help: "Requests served without a rate-limit decision because Redis was unreachable",
      registers,
    }),
    eventLag: new Histogram({
      name: "svc_gateway_event_lag_seconds",
      help: "Time from a credential change to this gateway hearing of it",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    }),
  };
}
export type GatewayMetrics = ReturnType<typeof gatewayMetricsFactory>;
