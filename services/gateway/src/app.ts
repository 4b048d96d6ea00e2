import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { STATUS_REASON_HEADER, asReasonPhrase, createBaseApp, type AddressMatcher, type Check, type ServiceMetrics } from "@svc/kit";
import { accessLogFactory } from "./domain/access-log.js";
import { admissionFactory, type AccessPolicy, type AdmissionDeps } from "./domain/admission.js";
import type { GatewayMetrics } from "./domain/gateway-metrics.js";
import type { CacheReport } from "./domain/cache-report.js";
import type { RightsCache } from "./domain/rights-cache.js";
import type { SessionCache } from "./domain/session-cache.js";
import { limitApiBodies } from "./proxy/api-body-limit.js";
import { registerProxyRoutes } from "./proxy/proxy-routes.js";
import type { Upstreams } from "./proxy/route-table.js";
import { cacheRoutes } from "./routes/cache-routes.js";
import { ociTokenRoute } from "./routes/oci-token-route.js";
import { npmLoginRoutes, type StartedLogin } from "./routes/npm-login-route.js";
import { tokenSignerFactory } from "./domain/oci-token.js";

export interface GatewayDeps {
  log: Logger;
  tenant: string;
  internalSecret: string;
  policy: AccessPolicy;
  cache: RightsCache;
  /** Console sessions; undefined: the session cookie is not read. */
  sessions?: SessionCache;
  /** This node's read caches (GET /api/caches, POST /api/caches/clear), and its name. */
  caches?: CacheReport;
  node?: string;
  upstreams: Upstreams;
  checks: Check[];
  /** The per-tenant rate limit (Redis), or undefined when none is configured at all. */
  limiter?: AdmissionDeps["limiter"];
  metrics?: ServiceMetrics;
  gatewayMetrics?: GatewayMetrics;
  /** npm's web login: starts a command-line sign-in at the auth service (routes/npm-login-route.ts). */
  startLogin?: (label: string) => Promise<StartedLogin>;
  /** Proxies whose X-Forwarded-For is believed (svc.trusted-proxies). */
  trustedProxies: AddressMatcher;
  /** Records each use of a key (svc.track-key-usage), or undefined when off. */
  recordUse?: (keyId: string, address: string) => void;
  /** Upstream connections per service and transport. */
  connections?: number;
  /** svc.upload-idle-timeout (default 30 s) and svc.upload-concurrency (default 16). */
  uploadIdleTimeoutMs?: number;
  uploadConcurrency?: number;
  /** svc.artifacts.separate-origin: artifacts are not forced to be saved (they stay sandboxed). */
  artifactsSeparateOrigin?: boolean;
  /** How long a download's upstream may send nothing, before its answer or within it (default 60 s). */
  upstreamSilenceMs?: number;
}

/** The upstream services' body limit (createBaseApp): the gateway refuses a larger API body itself. */
const API_BODY_LIMIT = 1024 * 1024;

export function buildApp(deps: GatewayDeps): FastifyInstance {
  const { cache } = deps;
  const tokens = tokenSignerFactory(deps.internalSecret);
  const admission = admissionFactory({ ...deps, tokens });
  const app = createBaseApp({
    log: deps.log,
    checks: deps.checks,
    metrics: deps.metrics,
    healthDetail: admission.mayReadHealthDetail,
    fastify: { keepAliveTimeout: 65_000, bodyLimit: API_BODY_LIMIT },
  });
  app.decorateRequest("forwardedPrincipal", "");
  app.decorateRequest("claimedPrincipal", "");
  app.decorateRequest("target", null as never);
  app.decorateRequest("callerRights", null);

  // Every request is admitted (rate limited, identified, authorised) before anything is proxied.
  app.addHook("onRequest", admission.admit);
  limitApiBodies(app, API_BODY_LIMIT);

  // A change made through this node is effective here at once: drop the key before answering,
  // or every signed-in person's rights after a change to people or groups (the person it names
  // travels in the body, which the gateway does not read; the announcement drops them elsewhere).
  app.addHook("onSend", (request, reply, payload, done) => {
    const t = request.target;
    if (t && t.kind === "api" && t.write && reply.statusCode < 400) {
      if (t.credentialId) cache.evict(t.credentialId);
      if (t.people) cache.evictPersons();
    }
    done(null, payload);
  });

  // An upstream refusal's reason phrase travels in a header (the proxy loses the status line's): put it back.
  app.addHook("onSend", (_request, reply, payload, done) => {
    const reason = reply.getHeader(STATUS_REASON_HEADER);
    if (reason !== undefined) {
      reply.removeHeader(STATUS_REASON_HEADER);
      reply.raw.statusMessage = asReasonPhrase(String(reason));
    }
    done(null, payload);
  });

  // One access line per answered request, refusals included.
  app.addHook("onResponse", accessLogFactory({ log: deps.log, trustedProxies: deps.trustedProxies }));

  if (deps.caches) cacheRoutes(app, { node: deps.node ?? "", caches: deps.caches });
  ociTokenRoute(app, { tenant: deps.tenant, policy: deps.policy, tokens });
  if (deps.startLogin) npmLoginRoutes(app, { startLogin: deps.startLogin, trustedProxies: deps.trustedProxies });
  registerProxyRoutes(app, deps);
  return app;
}
