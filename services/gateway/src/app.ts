import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import httpProxy from "@fastify/http-proxy";
import type { FastifyReplyFromHooks } from "@fastify/reply-from";
import type { Logger } from "pino";
import { IDENTITY_HEADERS, ServiceError, encodePrincipal } from "@svc/contracts";
import { clientAddress, createBaseApp, identityHeaders, sendUnexpected, type AddressMatcher, type Check } from "@svc/kit";
import { authorize, checkKey, classify, unauthenticated, type AccessPolicy, type Target } from "./domain/access.js";
import { readPresentedKey } from "./domain/key-reader.js";
import type { KeyRights, RightsCache } from "./domain/rights-cache.js";

export interface GatewayDeps {
  log: Logger;
  tenant: string;
  internalSecret: string;
  policy: AccessPolicy;
  cache: RightsCache;
  upstreams: { auth: string; artifacts: string; admin: string };
  checks: Check[];
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

const STRIP = ["service-repository-key", "authorization", "cookie", ...IDENTITY_HEADERS];

export function buildApp(deps: GatewayDeps): FastifyInstance {
  const app = createBaseApp({
    log: deps.log,
    checks: deps.checks,
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

  // Every request is identified and authorised here, before anything is proxied.
  app.addHook("onRequest", (request, reply, done) => {
    if (request.url.startsWith("/health/")) return done();
    let target: Target;
    try {
      target = classify(request.method, request.url);
      request.target = target;
      if (!policy.auth) {
        decide(request, target, null);
        request.forwardedPrincipal = anonymousPrincipal;
        return done();
      }
      const presented = readPresentedKey(request.headers);
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
      const finish = (key: KeyRights | null) => {
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
      const hit = cache.peek(parsed.id);
      if (hit) {
        finish(hit.value);
        return done();
      }
      cache.get(parsed.id).then(
        (key) => {
          try {
            finish(key);
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
  });

  // A change made through this node is effective here at once: drop the key before answering.
  app.addHook("onSend", (request, reply, payload, done) => {
    const t = request.target;
    if (t && t.kind === "api" && t.write && t.credentialId && reply.statusCode < 400) cache.evict(t.credentialId);
    done(null, payload);
  });

  const replyOptions: FastifyReplyFromHooks = {
    rewriteRequestHeaders: (request, headers) => {
      for (const h of STRIP) delete headers[h];
      // Sign exactly the path the upstream will see (reply-from normalises it through WHATWG URL).
      const u = new URL(request.url, "http://upstream.invalid");
      return { ...headers, ...identityHeaders(deps.internalSecret, request.method, u.pathname + u.search, request.forwardedPrincipal) };
    },
    onError: (reply, error) => {
      const err = (error as { error?: unknown })?.error ?? error;
      sendUnexpected(reply.request as FastifyRequest, reply as FastifyReply, err);
    },
  };
  const undici = { connections: deps.connections ?? 64, pipelining: 1, keepAliveTimeout: 60_000 };
  const disableRequestLogging = true;

  app.register(httpProxy, { upstream: deps.upstreams.artifacts, prefix: "/repository", rewritePrefix: "/repository", replyOptions, undici, disableRequestLogging });
  for (const prefix of ["/api/credentials", "/api/principals", "/api/groups"]) {
    app.register(httpProxy, { upstream: deps.upstreams.auth, prefix, rewritePrefix: prefix, replyOptions, undici, disableRequestLogging });
  }
  app.register(httpProxy, { upstream: deps.upstreams.admin, prefix: "/api", rewritePrefix: "/api", replyOptions, undici, disableRequestLogging });
  return app;
}
