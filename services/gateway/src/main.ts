import { addressMatcher, bootService, controlSubjects, fixedAt, liveSettingsFollower } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { accessPolicy } from "./domain/admission.js";
import { authClientFactory } from "./domain/auth-client.js";
import { cacheReportFactory } from "./domain/cache-report.js";
import { consoleClientFactory } from "./domain/console-client.js";
import { gatewayMetricsFactory } from "./domain/gateway-metrics.js";
import { limitSourceFactory } from "./domain/limit-source.js";
import { rateLimiterFactory } from "./domain/rate-limiter.js";
import { repositoryScopesFactory } from "./domain/repository-scopes.js";
import { rightsCacheFactory } from "./domain/rights-cache.js";
import { sessionCacheFactory } from "./domain/session-cache.js";
import { warnAboutSettings } from "./domain/startup-advisories.js";
import { usageRecorderFactory } from "./domain/usage-recorder.js";
import { upstreamProbesFactory } from "./health/upstream-probes.js";
import { gatewayListenersFactory } from "./messaging/credential-change-listener.js";

/** The longest a gateway trusts what it was told of a console session (svc.cache.ttl when shorter). */
const SESSION_TTL_MS = 60_000;

void bootService({
  name: "gateway",
  loadConfig,
  readyMessage: "gateway ready",
  wire({ config, log, metrics, bus }) {
    warnAboutSettings(config, log);
    const authClient = authClientFactory({ authUrl: config.authUrl, internalSecret: config.internalSecret, tenant: config.tenant });
    const cache = rightsCacheFactory({ ttlMs: config.cacheTtlMs, lookup: authClient.lookup });
    // Sessions are kept briefly: a sign-out is heard at once, but an idle timeout only when asked.
    const consoleClient = consoleClientFactory({ consoleUrl: config.consoleUrl, internalSecret: config.internalSecret, tenant: config.tenant });
    const sessions = sessionCacheFactory({ ttlMs: Math.min(config.cacheTtlMs, SESSION_TTL_MS), lookup: consoleClient.session });
    const gatewayMetrics = gatewayMetricsFactory(metrics, cache, sessions);
    // The rate limit: svc.rate-limit per tenant per minute, overrides from the admin service.
    const limits = limitSourceFactory({ adminUrl: config.adminUrl, internalSecret: config.internalSecret, tenant: config.tenant, defaultPerMinute: config.rateLimit, defaultFixed: fixedAt(config, "rateLimit") !== undefined, log });
    const limiter = config.redisUrl ? rateLimiterFactory({ redisUrl: config.redisUrl, log, tenant: config.tenant, limitFor: limits.limitFor }) : undefined;
    void limits.refresh();
    // Repositories authorised by the repository their path names (PATCH /api/repositories/<name> {"scopeFromPath"}).
    const scopes = repositoryScopesFactory({ artifactsUrl: config.artifactsUrl, internalSecret: config.internalSecret, tenant: config.tenant, log });
    void scopes.refresh();
    const usage = config.trackKeyUsage ? usageRecorderFactory({ send: authClient.postUsage, log }) : undefined;
    gatewayListenersFactory({ bus, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, cache, sessions, metrics: gatewayMetrics, refreshLimits: () => void limits.refresh(), repositoryChanged: scopes.heard, node: metrics.node });
    const control = controlSubjects(config.internalSecret);
    const caches = cacheReportFactory({
      parts: [
        { name: "credentials", description: "Rights of keys and of signed-in people (their own grants and their groups'), as the auth service resolved them", stats: () => cache.parts().known, clear: () => cache.clear() },
        { name: "unknown-keys", description: "Well-formed keys the auth service does not know, remembered briefly so a flood of one made-up key asks once", stats: () => cache.parts().unknown, clear: () => cache.clear() },
        { name: "sessions", description: "What console session cookies stand for (person, end, anti-forgery token), as the console answered; unknown ones remembered briefly", stats: () => ({ ...sessions.stats(), ttlMs: sessions.ttlMs }), clear: () => sessions.clear() },
        { name: "rate-limit-overrides", description: "Per-tenant rate-limit overrides read from the admin service", stats: limits.stats, clear: limits.clear },
        { name: "repository-scopes", description: "The repositories authorised by the repository their path names (scopeFromPath), read from the artifacts service", stats: scopes.stats, clear: scopes.clear },
      ],
      announce: () => bus.announce(control.caches, { node: metrics.node }),
    });

    const upstreams = {
      auth: config.authUrl,
      artifacts: config.artifactsUrl,
      admin: config.adminUrl,
      walker: config.walkerUrl,
      notifier: config.notifierUrl,
      console: config.consoleUrl,
    };
    const probes = upstreamProbesFactory(upstreams);
    // svc.ui.deploy changes at run time (PUT /api/settings/ui.deploy): the policy follows it.
    const policy = accessPolicy({ ...config, repositoryFromPath: scopes.fromPath });
    const follower = liveSettingsFollower({ config, adminUrl: config.adminUrl, caller: "gateway", bus, log });
    follower.onChange((now) => {
      if (now.uiDeploy !== policy.deployByCookie) log.info({ setting: "svc.ui.deploy", value: now.uiDeploy }, "console Deploy switched at run time");
      policy.deployByCookie = now.uiDeploy;
    });
    void follower.refresh();
    const redisUp = () => limiter?.up() ?? true;
    const app = buildApp({
      log,
      tenant: config.tenant,
      startLogin: authClient.startLogin,
      internalSecret: config.internalSecret,
      policy,
      cache,
      sessions,
      caches,
      node: metrics.node,
      trustedProxies: addressMatcher(config.trustedProxies),
      recordUse: usage?.record,
      upstreams,
      uploadIdleTimeoutMs: config.uploadIdleTimeoutMs,
      uploadConcurrency: config.uploadConcurrency,
      artifactsSeparateOrigin: config.artifactsSeparateOrigin,
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
      closers: [() => follower.close(), () => usage?.close(), () => limits.close(), () => scopes.close(), () => limiter?.close(), () => authClient.close(), () => consoleClient.close(), () => probes.close()],
    };
  },
});
