import { addressMatcher, controlSubjects, createBus, createLogger, createMetrics, onShutdown, refuseStart, startNodeAgent } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type GatewayConfig } from "./config.js";
import { accessPolicy } from "./domain/admission.js";
import { authClientFactory } from "./domain/auth-client.js";
import { gatewayMetricsFactory } from "./domain/gateway-metrics.js";
import { limitSourceFactory } from "./domain/limit-source.js";
import { rateLimiterFactory } from "./domain/rate-limiter.js";
import { rightsCacheFactory } from "./domain/rights-cache.js";
import { usageRecorderFactory } from "./domain/usage-recorder.js";
import { upstreamProbesFactory } from "./health/upstream-probes.js";

let config: GatewayConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("gateway", err);
}

const { log, ring } = createLogger("gateway", config.logLevel);
const metrics = createMetrics("gateway");
const policy = accessPolicy(config);
if (!config.auth) {
  log.warn("svc.auth=false: every request is served anonymously; anyone who can reach this port can read, publish and delete (advisory svc.auth.open)");
} else if (config.anonymousRights.some((g) => g.tokens.some((t) => t === "*" || t.endsWith(":write") || t.endsWith(":*")))) {
  log.warn({ anonymousRights: config.anonymousRights }, "svc.anonymous-rights lets a keyless caller write or administer");
}
if (config.readOnly) log.warn("svc.read-only is on: every artifact write is refused with 403");

const authClient = authClientFactory({ authUrl: config.authUrl, internalSecret: config.internalSecret, tenant: config.tenant });
const cache = rightsCacheFactory({ ttlMs: config.cacheTtlMs, lookup: authClient.lookup });

const gatewayMetrics = gatewayMetricsFactory(metrics, cache);

// The rate limit: svc.rate-limit per tenant per minute, overrides from the admin service.
const limits = limitSourceFactory({ adminUrl: config.adminUrl, internalSecret: config.internalSecret, tenant: config.tenant, defaultPerMinute: config.rateLimit, log });
const limiter = config.redisUrl ? rateLimiterFactory({ redisUrl: config.redisUrl, log, limitFor: limits.limitFor }) : undefined;
if (!config.redisUrl) log.warn("svc.redis-url is not set: requests are served without a rate limit");
void limits.refresh();

const usage = config.trackKeyUsage ? usageRecorderFactory({ send: authClient.postUsage, log }) : undefined;

const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: "gateway", log });
bus.subscribe("credential.changed", (event) => {
  gatewayMetrics.eventLag.observe(Math.max(0, (Date.now() - Date.parse(event.time)) / 1000));
  if (event.subject.kind === "key") cache.evict(event.subject.id);
  else cache.clear(); // a person's or group's change can touch many keys' holders: start afresh
});

const agent = startNodeAgent({
  bus,
  settings: config,
  metrics,
  ring,
  status: () => ({ nats: bus.connected() ? "up" : "down", ...(limiter ? { redis: limiter.up() ? "up" : "down" } : {}) }),
});
bus.listen(controlSubjects(config.internalSecret).limits, () => void limits.refresh());

const upstreams = { auth: config.authUrl, artifacts: config.artifactsUrl, admin: config.adminUrl, walker: config.walkerUrl, notifier: config.notifierUrl };
const probes = upstreamProbesFactory(upstreams);

const app = buildApp({
  log,
  tenant: config.tenant,
  internalSecret: config.internalSecret,
  policy,
  cache,
  trustedProxies: addressMatcher(config.trustedProxies),
  recordUse: usage?.record,
  upstreams,
  limiter,
  metrics,
  gatewayMetrics,
  checks: [
    ...probes.checks,
    { name: "nats", check: async () => (bus.connected() ? { ok: true } : { ok: false, error: "not connected" }) },
    ...(limiter ? [{ name: "redis", check: async () => (limiter.up() ? ({ ok: true } as const) : ({ ok: false, error: "not reachable" } as const)) }] : []),
  ],
});
await app.listen({ host: config.host, port: config.port });
log.info({ port: config.port, cacheTtlMs: config.cacheTtlMs }, "gateway ready");

onShutdown(log, [() => app.close(), async () => agent.stop(), async () => usage?.close(), () => limits.close(), async () => limiter?.close(), () => bus.close(), () => authClient.close(), () => probes.close()], config.shutdownGraceMs);
