import { Counter, Gauge, Histogram } from "prom-client";
import type { ServiceMetrics } from "@svc/kit";
import type { RightsCache } from "./rights-cache.js";

/** The gateway's own meters, beside the HTTP ones every service has. */
export function gatewayMetricsFactory(m: ServiceMetrics, cache: RightsCache) {
  const registers = [m.registry];
  new Gauge({
    name: "svc_gateway_key_cache_entries",
    help: "Keys whose rights this gateway holds in its cache",
    registers,
    collect() {
      this.set(cache.stats().size);
    },
  });
  // The cache counts on its own hot path; the counters catch up when scraped.
  let hits = 0;
  let misses = 0;
  new Counter({
    name: "svc_gateway_key_cache_hits_total",
    help: "Requests whose key was decided from the cache",
    registers,
    collect() {
      const now = cache.stats().hits;
      this.inc(now - hits);
      hits = now;
    },
  });
  new Counter({
    name: "svc_gateway_key_cache_misses_total",
    help: "Requests whose key had to be looked up in the auth service",
    registers,
    collect() {
      const now = cache.stats().misses;
      this.inc(now - misses);
      misses = now;
    },
  });
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
