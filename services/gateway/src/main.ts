import { Pool } from "undici";
import { addressMatcher, createBus, createLogger, onShutdown, refuseStart } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type GatewayConfig } from "./config.js";
import { accessPolicy } from "./domain/access.js";
import { authClientFactory } from "./domain/auth-client.js";
import { rightsCacheFactory } from "./domain/rights-cache.js";
import { usageRecorderFactory } from "./domain/usage-recorder.js";

let config: GatewayConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("gateway", err);
}

const { log } = createLogger("gateway", config.logLevel);
const policy = accessPolicy(config);
if (!config.auth) {
  log.warn("svc.auth=false: every request is served anonymously; anyone who can reach this port can read, publish and delete (advisory svc.auth.open)");
} else if (config.anonymousRights.some((g) => g.tokens.some((t) => t === "*" || t.endsWith(":write") || t.endsWith(":*")))) {
  log.warn({ anonymousRights: config.anonymousRights }, "svc.anonymous-rights lets a keyless caller write or administer");
}
if (config.readOnly) log.warn("svc.read-only is on: every artifact write is refused with 403");

const authClient = authClientFactory({ authUrl: config.authUrl, internalSecret: config.internalSecret, tenant: config.tenant });
const cache = rightsCacheFactory({ ttlMs: config.cacheTtlMs, lookup: authClient.lookup });

const usage = config.trackKeyUsage ? usageRecorderFactory({ send: authClient.postUsage, log }) : undefined;

const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: "gateway", log });
bus.subscribe("credential.changed", (event) => {
  if (event.subject.kind === "key") cache.evict(event.subject.id);
  else cache.clear(); // a person's or group's change can touch many keys' holders: start afresh
});

const probes = new Map<string, Pool>();
const upstreamCheck = (name: string, url: string) => {
  const pool = new Pool(url, { connections: 2 });
  probes.set(name, pool);
  return {
    name,
    check: async () => {
      try {
        const res = await pool.request({ method: "GET", path: "/health/ready", headersTimeout: 2000, bodyTimeout: 2000 });
        await res.body.dump();
        return res.statusCode === 200 ? ({ ok: true } as const) : ({ ok: false, error: `answered ${res.statusCode}` } as const);
      } catch (err) {
        return { ok: false as const, error: (err as Error).message };
      }
    },
  };
};

const app = buildApp({
  log,
  tenant: config.tenant,
  internalSecret: config.internalSecret,
  policy,
  cache,
  trustedProxies: addressMatcher(config.trustedProxies),
  recordUse: usage?.record,
  upstreams: { auth: config.authUrl, artifacts: config.artifactsUrl, admin: config.adminUrl },
  checks: [
    upstreamCheck("auth", config.authUrl),
    upstreamCheck("artifacts", config.artifactsUrl),
    upstreamCheck("admin", config.adminUrl),
    { name: "nats", check: async () => (bus.connected() ? { ok: true } : { ok: false, error: "not connected" }) },
  ],
});
await app.listen({ host: config.host, port: config.port });
log.info({ port: config.port, cacheTtlMs: config.cacheTtlMs }, "gateway ready");

onShutdown(log, [() => app.close(), async () => usage?.close(), () => bus.close(), () => authClient.close(), ...[...probes.values()].map((p) => () => p.close())]);
