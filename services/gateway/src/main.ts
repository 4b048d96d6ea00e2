import { addressMatcher, bootService } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { accessPolicy } from "./domain/admission.js";
import { authClientFactory } from "./domain/auth-client.js";
import { gatewayMetricsFactory } from "./domain/gateway-metrics.js";
import { limitSourceFactory } from "./domain/limit-source.js";
import { rateLimiterFactory } from "./domain/rate-limiter.js";
import { rightsCacheFactory } from "./domain/rights-cache.js";
import { warnAboutSettings } from "./domain/startup-advisories.js";
import { usageRecorderFactory } from "./domain/usage-recorder.js";
import { upstreamProbesFactory } from "./health/upstream-probes.js";
import { gatewayListenersFactory } from "./messaging/credential-change-listener.js";

await bootService({
  name: "gateway",
  loadConfig,
  readyMessage: "gateway ready",
  wire({ config, log, metrics, bus }) {
    warnAboutSettings(config, log);
    const authClient = authClientFactory({ authUrl: config.authUrl, internalSecret: config.internalSecret, tenant: config.tenant });
    const cache = rightsCacheFactory({ ttlMs: config.cacheTtlMs, lookup: authClient.lookup });
    const gatewayMetrics = gatewayMetricsFactory(metrics, cache);
    // The rate limit: svc.rate-limit per tenant per minute, overrides from the admin service.
    const limits = limitSourceFactory({ adminUrl: config.adminUrl, internalSecret: config.internalSecret, tenant: config.tenant, defaultPerMinute: config.rateLimit, log });
    const limiter = config.redisUrl ? rateLimiterFactory({ redisUrl: config.redisUrl, log, tenant: config.tenant, limitFor: limits.limitFor }) : undefined;
    void limits.refresh();
    const usage = config.trackKeyUsage ? usageRecorderFactory({ send: authClient.postUsage, log }) : undefined;
    gatewayListenersFactory({ bus, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, cache, metrics: gatewayMetrics, refreshLimits: () => void limits.refresh() });

    const upstreams = { auth: config.authUrl, artifacts: config.artifactsUrl, admin: config.adminUrl, walker: config.walkerUrl, notifier: config.notifierUrl };
    const probes = upstreamProbesFactory(upstreams);
    const redisUp = () => limiter?.up() ?? true;
    const app = buildApp({
      log,
      tenant: config.tenant,
      internalSecret: config.internalSecret,
      policy: accessPolicy(config),
      cache,
      trustedProxies: addressMatcher(config.trustedProxies),
      recordUse: usage?.record,
      upstreams,
      uploadIdleTimeoutMs: config.uploadIdleTimeoutMs,
      uploadConcurrency: config.uploadConcurrency,
      limiter,
      metrics,
      gatewayMetrics,
      checks: [
        ...probes.checks,
        { name: "nats", check: async () => (bus.connected() ? { ok: true } : { ok: false, error: "not connected" }) },
        ...(limiter ? [{ name: "redis", check: async () => ((await limiter.probe()) ? ({ ok: true } as const) : ({ ok: false, error: "not reachable" } as const)) }] : []),
      ],
    });
    return {
      app,
      ready: { port: config.port, cacheTtlMs: config.cacheTtlMs },
      status: (): Record<string, string> => (limiter ? { redis: redisUp() ? "up" : "down" } : {}),
      // Usage flushes through the auth client: it goes first.
      closers: [() => usage?.close(), () => limits.close(), () => limiter?.close(), () => authClient.close(), () => probes.close()],
    };
  },
});
