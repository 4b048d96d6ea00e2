import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import httpProxy, { type FastifyHttpProxyOptions } from "@fastify/http-proxy";
import type { FastifyReplyFromHooks } from "@fastify/reply-from";
import type { Logger } from "pino";
import { Pool, type Dispatcher } from "undici";
import { IDENTITY_HEADERS, ServiceError, encodePrincipal } from "@svc/contracts";
import { Right, deploymentRights } from "@svc/grants";
import { clientAddress, createBaseApp, identitySigner, sendUnexpected, type AddressMatcher, type Check, type IdentitySigner, type ServiceMetrics } from "@svc/kit";
import { DownloadPool } from "./download-pool.js";
import { authorize, checkKey, classify, unauthenticated, type AccessPolicy, type Target } from "./domain/access.js";
import { readPresentedKey, type Presented } from "./domain/key-reader.js";
import type { GatewayMetrics } from "./domain/gateway-metrics.js";
import type { Verdict } from "./domain/rate-limiter.js";
import type { KeyRights, RightsCache } from "./domain/rights-cache.js";

export interface GatewayDeps {
  log: Logger;
  tenant: string;
  internalSecret: string;
  policy: AccessPolicy;
  cache: RightsCache;
  upstreams: { auth: string; artifacts: string; admin: string; walker: string; notifier: string };
  checks: Check[];
  /** The per-tenant rate limit (Redis), or undefined when none is configured at all. */
  limiter?: { take(bucket: string, tenantForLimit: string, then: (verdict: Verdict) => void): void };
  metrics?: ServiceMetrics;
  gatewayMetrics?: GatewayMetrics;
  /** Proxies whose X-Forwarded-For is believed (svc.trusted-proxies). */
  trustedProxies: AddressMatcher;
  /** Records each use of a key (svc.track-key-usage), or undefined when off. */
  recordUse?: (keyId: string, address: string) => void;
  /** Upstream connection pool size per service. */
  connections?: number;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The signed identity to forward upstream (`kind:tenant:id`). */
    forwardedPrincipal: string;
    target: Target;
  }
}

/**
 * Never forwarded: the client's credentials and identity claims, and the hop-by-hop headers
 * that describe the client's connection to us, not ours to the upstream. Node answers
 * `Expect: 100-continue` itself (curl sends it with every upload over 1 MiB), and undici refuses
 * to send `expect`, `keep-alive` or `upgrade` at all: forwarded, they made an upload fail with 500.
 */
const STRIP = ["service-repository-key", "authorization", "cookie", ...IDENTITY_HEADERS, "expect", "keep-alive", "upgrade", "proxy-connection", "te", "trailer"];
const ANONYMOUS_BUCKET = "~anonymous";
const NO_KEY: Presented = { kind: "none" };
const TOO_MANY = "too many requests for this tenant: slow down and retry after a minute";

/**
 * Carries the principal from rewriteRequestHeaders to the upstream pool on the header object that
 * reply-from hands to undici. A symbol: no client header can set it, and undici sends only
 * string-keyed headers.
 */
const kPrincipal = Symbol("svc.forwardedPrincipal");

/**
 * The keep-alive connection pool to one upstream. It signs each request where undici takes it:
 * over the method and the exact path (with query) that goes on the wire, whatever reply-from
 * and http-proxy made of the client's URL. A request without a principal goes unsigned, and the
 * upstream refuses it.
 */
class SigningPool extends Pool {
  constructor(
    origin: string,
    options: Pool.Options,
    private readonly sign: IdentitySigner,
  ) {
    super(origin, options);
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const headers = opts.headers as Record<string | symbol, unknown> | null | undefined;
    const principal = headers?.[kPrincipal];
    if (typeof principal === "string") this.sign(headers as Record<string, unknown>, opts.method, opts.path, principal);
    return super.dispatch(opts, handler);
  }
}

type ProxyHandler = NonNullable<FastifyHttpProxyOptions["handler"]>;

/** Request headers a download does not pass on (beside STRIP): the upstream connection's own. */
const NOT_FORWARDED = new Set([...STRIP, "connection", "host", "content-length", "transfer-encoding"]);

/** The request head sent upstream for a GET: the client's end-to-end headers, our host, the signed identity. */
function downloadRequestHead(request: FastifyRequest, path: string, host: string, sign: IdentitySigner): string {
  let head = `GET ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  const connection = request.headers.connection;
  const listed = typeof connection === "string" ? connection.toLowerCase().split(",").map((t) => t.trim()) : [];
  const raw = request.raw.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const lower = raw[i]!.toLowerCase();
    if (NOT_FORWARDED.has(lower) || listed.includes(lower)) continue;
    head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  }
  const identity: Record<string, unknown> = {};
  sign(identity, "GET", path, request.forwardedPrincipal);
  for (const name in identity) head += `${name}: ${identity[name] as string}\r\n`;
  return `${head}\r\n`;
}

/**
 * Answers a GET from the download pool: the upstream's status and headers, then its body in
 * buffers the pool lends and takes back once written to the client.
 */
function forwardDownload(pool: DownloadPool, request: FastifyRequest, reply: FastifyReply, dest: string, host: string, sign: IdentitySigner, unframed: () => void): void {
  // The path reply-from would send: the destination resolved against the upstream, the client's query as it came.
  const q = request.url.indexOf("?");
  const path = new URL(dest, "http://upstream").pathname + (q < 0 ? "" : request.url.slice(q));
  const res = reply.raw;
  const cancel = pool.request(downloadRequestHead(request, path, host, sign), {
    head: ({ status, headers }) => {
      try {
        res.writeHead(status, headers);
      } catch (err) {
        // A header Node will not send (a control character): refused like any other failure.
        cancel();
        sendUnexpected(request, reply, err);
        return;
      }
      reply.hijack();
    },
    data: (chunk, release) => {
      res.write(chunk, release);
    },
    end: () => {
      res.end();
    },
    unframed,
    fail: (err, headSent) => {
      if (headSent) res.destroy(err);
      else sendUnexpected(request, reply, err);
    },
  });
  // The client went away before the whole answer was written: drop the upstream connection.
  res.once("close", () => {
    if (!res.writableFinished) cancel();
  });
}

export function buildApp(deps: GatewayDeps): FastifyInstance {
  const app = createBaseApp({
    log: deps.log,
    checks: deps.checks,
    metrics: deps.metrics,
    // Health detail (which dependency is down, and why) only for an administrator of this tenant.
    healthDetail: async (request) => {
      if (!deps.policy.auth) return true;
      const presented = readPresentedKey(request.headers);
      if (presented.kind !== "key" || presented.key.tenant !== deps.tenant) return false;
      const key = deps.cache.peek(presented.key.id)?.value ?? (await deps.cache.get(presented.key.id).catch(() => null));
      const now = Date.now();
      if (!key || key.revoked || !(key.expiresAt > now)) return false;
      return (deploymentRights(key.grants, now) & Right.manageRead) !== 0;
    },
    fastify: { keepAliveTimeout: 65_000, bodyLimit: 1024 * 1024 },
  });
  app.decorateRequest("forwardedPrincipal", "");
  app.decorateRequest("target", null as never);
  const anonymousPrincipal = encodePrincipal({ kind: "anonymous", tenant: deps.tenant, id: "" });
  const { policy, cache, tenant } = deps;

  const decide = (request: FastifyRequest, target: Target, key: KeyRights | null) => {
    const header = request.headers["service-repository-name"];
    authorize(policy, target, key, typeof header === "string" ? header : undefined, Date.now());
  };

  /** Admits a request that presents a key (null: unknown); throws the refusal. */
  const admitKey = (request: FastifyRequest, target: Target, key: KeyRights | null) => {
    checkKey(target, key, tenant, Date.now());
    let from: string | undefined;
    if (key.allowedFrom) {
      from = clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], deps.trustedProxies);
      if (!key.allowedFrom(from)) throw new ServiceError("forbidden", `this key may not be used from ${from}`);
    }
    decide(request, target, key);
    request.forwardedPrincipal = encodePrincipal({ kind: "key", tenant, id: key.id });
    if (deps.recordUse) deps.recordUse(key.id, from ?? clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], deps.trustedProxies));
  };

  /** Identifies and authorises a request; calls done() to go on or done(err) to refuse. */
  const admit = (request: FastifyRequest, reply: FastifyReply, target: Target, presented: Presented, done: (err?: Error) => void) => {
    try {
      if (!policy.auth) {
        decide(request, target, null);
        request.forwardedPrincipal = anonymousPrincipal;
        return done();
      }
      if (presented.kind === "malformed") {
        throw new ServiceError("unauthenticated", "the key in Service-Repository-Key is malformed", target.kind === "artifact" ? { headers: { "www-authenticate": 'Basic realm="artifact repository", charset="UTF-8"' } } : {});
      }
      if (presented.kind === "none") {
        decide(request, target, null);
        request.forwardedPrincipal = anonymousPrincipal;
        return done();
      }
      const parsed = presented.key;
      if (parsed.tenant !== tenant) throw unauthenticated(target, "this key belongs to another tenant");
      const hit = cache.peek(parsed.id);
      if (hit) {
        admitKey(request, target, hit.value);
        return done();
      }
      cache.get(parsed.id).then(
        (key) => {
          try {
            admitKey(request, target, key);
            done();
          } catch (err) {
            done(err as Error);
          }
        },
        (err: unknown) => {
          sendUnexpected(request, reply, err);
        },
      );
    } catch (err) {
      done(err as Error);
    }
  };

  // Every request is rate limited, identified and authorised here, before anything is proxied.
  // Health probes and metric scrapes are never limited.
  const limiter = deps.limiter;
  app.addHook("onRequest", (request, reply, done) => {
    if (request.url.startsWith("/health/")) return done();
    let target: Target;
    try {
      target = classify(request.method, request.url);
    } catch (err) {
      return done(err as Error);
    }
    request.target = target;
    const presented = policy.auth ? readPresentedKey(request.headers) : NO_KEY;
    if (!limiter || (target.kind === "api" && target.metrics)) return admit(request, reply, target, presented, done);
    const bucket = presented.kind === "key" ? presented.key.tenant : ANONYMOUS_BUCKET;
    limiter.take(bucket, presented.kind === "key" ? presented.key.tenant : tenant, (verdict) => {
      if (verdict === "refuse") {
        deps.gatewayMetrics?.rateLimited.inc({ bucket: bucket === ANONYMOUS_BUCKET ? "anonymous" : "tenant" });
        return done(new ServiceError("rate_limited", TOO_MANY, { headers: { "retry-after": "60" } }));
      }
      if (verdict === "degraded") deps.gatewayMetrics?.rateLimitDegraded.inc();
      admit(request, reply, target, presented, done);
    });
  });

  // A change made through this node is effective here at once: drop the key before answering.
  app.addHook("onSend", (request, reply, payload, done) => {
    const t = request.target;
    if (t && t.kind === "api" && t.write && t.credentialId && reply.statusCode < 400) cache.evict(t.credentialId);
    done(null, payload);
  });

  const replyOptions: FastifyReplyFromHooks = {
    // `headers` is reply-from's own copy of the client's headers: changed in place.
    rewriteRequestHeaders: (request, headers) => {
      for (let i = 0; i < STRIP.length; i++) if (headers[STRIP[i]!] !== undefined) delete headers[STRIP[i]!];
      // The pool signs it together with the exact path it sends (SigningPool).
      (headers as Record<symbol, unknown>)[kPrincipal] = request.forwardedPrincipal;
      return headers;
    },
    onError: (reply, error) => {
      const err = (error as { error?: unknown })?.error ?? error;
      sendUnexpected(reply.request as FastifyRequest, reply as FastifyReply, err);
    },
  };
  // One keep-alive pool per upstream service (shared by its prefixes). Upstreams keep idle
  // connections 65 s; we drop ours first.
  const sign = identitySigner(deps.internalSecret);
  const pools = new Map<string, SigningPool>();
  const poolFor = (origin: string) => {
    let pool = pools.get(origin);
    if (!pool) {
      pool = new SigningPool(origin, { connections: deps.connections ?? 64, pipelining: 1, keepAliveTimeout: 60_000 }, sign);
      pools.set(origin, pool);
    }
    return pool;
  };
  // Artifact downloads (GET /repository/...) take their own pool: see download-pool.ts.
  const artifacts = new URL(deps.upstreams.artifacts);
  const downloads =
    artifacts.protocol === "http:"
      ? new DownloadPool({ host: artifacts.hostname, port: Number(artifacts.port || 80), connections: deps.connections ?? 64, timeoutMs: 60_000 })
      : undefined;
  app.addHook("onClose", async () => {
    downloads?.close();
    await Promise.all([...pools.values()].map((p) => p.close()));
  });
  // Per-request log lines cost throughput (as in createBaseApp); failures are still logged.
  const disableRequestLogging = true;
  const proxy = (upstream: string, prefix: string, handler?: ProxyHandler) =>
    app.register(httpProxy, { upstream, prefix, rewritePrefix: prefix, replyOptions, undici: poolFor(new URL(upstream).origin), disableRequestLogging, handler });

  proxy(
    deps.upstreams.artifacts,
    "/repository",
    downloads &&
      ((request, reply, dest, options) => {
        // Anything the download pool cannot read (a body not delimited by Content-Length) is
        // sent again the general way: a GET may be repeated.
        const general = () => reply.from(dest, options);
        if (request.method !== "GET") return general();
        forwardDownload(downloads, request, reply, dest, artifacts.host, sign, general);
        return reply;
      }),
  );
  proxy(deps.upstreams.artifacts, "/api/repositories");
  for (const prefix of ["/api/credentials", "/api/principals", "/api/groups"]) proxy(deps.upstreams.auth, prefix);
  proxy(deps.upstreams.walker, "/api/walks");
  proxy(deps.upstreams.notifier, "/api/webhooks");
  proxy(deps.upstreams.admin, "/api");
  proxy(deps.upstreams.admin, "/metrics");
  return app;
}
