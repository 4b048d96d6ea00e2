import type { FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, encodePrincipal, invalid } from "@svc/contracts";
import { Right, anyRights, compileGrants, deploymentRights, isRepositoryName, parseArtifactUrl, rightsFor, type CompiledGrant, type GrantSpec } from "@svc/grants";
import { clientAddress, sendUnexpected, type AddressMatcher } from "@svc/kit";
import { readPresentedKey, type Presented } from "./key-reader.js";
import type { GatewayMetrics } from "./gateway-metrics.js";
import type { Verdict } from "./rate-limiter.js";
import type { KeyRights, RightsCache } from "./rights-cache.js";
import { isUnder, routedPath } from "./request-target.js";

/*
 * The admission of every request, in the order it happens:
 *   1. classify: what the request asks for (an artifact, the API, or nothing we guard);
 *   2. read the key it presents (a malformed Service-Repository-Key is refused, unlooked-up);
 *   3. rate limit, per tenant (health probes and metric scrapes are never limited);
 *   4. identify: the key's rights from the cache, or from the auth service on a miss; then
 *      tenant, revocation, expiry and the source-address allowlist;
 *   5. authorise: read-only, then the right the target needs, from the key's grants and the
 *      keyless caller's (svc.anonymous-rights);
 *   6. the principal the request is forwarded as.
 * Health detail is decided by the same steps 2, 4 and 5. packages/grants holds the grant
 * grammar and the rights arithmetic; what to require of whom is decided here only.
 */

declare module "fastify" {
  interface FastifyRequest {
    /** The signed identity to forward upstream (`kind:tenant:id`). */
    forwardedPrincipal: string;
    target: Target;
  }
}

// 1. What a request asks for, read from its method and path.

export type Target =
  | { kind: "artifact"; repository: string; path: string; write: boolean }
  | { kind: "api"; write: boolean; capabilities: boolean; credentialId: string | undefined; metrics: boolean }
  | { kind: "open" };

const CREDENTIAL_PATH = /^\/api\/credentials\/([0-9a-f]{64})(?:\/|$)/;

/**
 * Decided on the path the router routes on (request-target.ts), never on the raw text: a
 * target that would be routed to a guarded prefix is guarded, however it is spelt. Throws the
 * 400 for a target the router and the proxy could read differently.
 */
export function classify(method: string, url: string): Target {
  const path = routedPath(url);
  const write = method !== "GET" && method !== "HEAD";
  if (isUnder(path, "/repository")) {
    // The artifact path is read from the raw target, segment by segment; its prefix must be plain.
    if (!url.startsWith("/repository")) throw invalid("path", "the /repository prefix must not be percent-encoded");
    const a = parseArtifactUrl(url);
    return { kind: "artifact", repository: a.repository, path: a.path, write };
  }
  if (isUnder(path, "/api")) {
    return {
      kind: "api",
      write,
      capabilities: path === "/api/capabilities",
      credentialId: CREDENTIAL_PATH.exec(path)?.[1],
      metrics: false,
    };
  }
  // The deployment's meters: manage:read over * (of this, the operator's, tenant), like /api/.
  if (isUnder(path, "/metrics")) return { kind: "api", write, capabilities: false, credentialId: undefined, metrics: true };
  return OPEN;
}

const OPEN: Target = { kind: "open" };
/** Health detail (which dependency is down, and why) asks what reading the meters asks: manage:read on *. */
const HEALTH_DETAIL: Target = { kind: "api", write: false, capabilities: false, credentialId: undefined, metrics: true };

// The deployment's rules: svc.auth, svc.read-only, svc.anonymous-rights.

export interface AccessPolicy {
  auth: boolean;
  readOnly: boolean;
  anonymous: CompiledGrant[];
}

export function accessPolicy(s: { auth: boolean; readOnly: boolean; anonymousRights: GrantSpec[] }): AccessPolicy {
  return { auth: s.auth, readOnly: s.readOnly, anonymous: compileGrants(s.anonymousRights) };
}

/** The one Basic challenge: artifact clients (Maven, docker login) answer it with the key as password. */
export const BASIC_CHALLENGE: Readonly<Record<string, string>> = { "www-authenticate": 'Basic realm="artifact repository", charset="UTF-8"' };

/** 401, with a Basic challenge on artifact paths and a bare 401 on /api/ (no browser dialog). */
export function unauthenticated(target: Target, message: string): ServiceError {
  return new ServiceError("unauthenticated", message, target.kind === "artifact" ? { headers: BASIC_CHALLENGE } : {});
}

const ANONYMOUS_BUCKET = "~anonymous";
export const KEY_REQUIRED = "a key is required: send it in Service-Repository-Key, as a Bearer token, or as the Basic password";
/** Authorization held something, but not a key: say so rather than ask for one. */
export const NOT_A_KEY =
  "the Authorization header does not hold a well-formed key (svck_…): send the key as a Bearer token, as the Basic password, or in Service-Repository-Key";
const UNKNOWN_KEY = "unknown key: it was not minted here or has been deleted; check it was copied whole, or ask an administrator for a new key";
const NO_KEY: Presented = { kind: "none" };
const TOO_MANY = "too many requests for this tenant: slow down and retry after a minute";

export interface AdmissionDeps {
  tenant: string;
  policy: AccessPolicy;
  cache: Pick<RightsCache, "peek" | "get">;
  /** The per-tenant rate limit (Redis), or undefined when none is configured at all. */
  limiter?: { take(bucket: string, tenantForLimit: string, then: (verdict: Verdict) => void): void };
  gatewayMetrics?: Pick<GatewayMetrics, "rateLimited" | "rateLimitDegraded">;
  /** Proxies whose X-Forwarded-For is believed (svc.trusted-proxies). */
  trustedProxies: AddressMatcher;
  /** Records each use of a key (svc.track-key-usage), or undefined when off. */
  recordUse?: (keyId: string, address: string) => void;
}

/** Fastify's hook callback: no argument to go on, the refusal to stop. */
export type AdmissionDone = (err?: Error) => void;

export function admissionFactory(deps: AdmissionDeps) {
  const { tenant, policy, cache, limiter, trustedProxies, recordUse } = deps;
  const anonymousPrincipal = encodePrincipal({ kind: "anonymous", tenant, id: "" });

  /**
   * The onRequest hook: classifies, limits, identifies and authorises a request before anything
   * is proxied, and sets `target` and `forwardedPrincipal`. Calls done() to go on or done(err)
   * with the refusal; a failed key lookup is answered 500 here. A callback, not a promise: this
   * runs for every request, and a cache hit stays synchronous.
   */
  function admit(request: FastifyRequest, reply: FastifyReply, done: AdmissionDone): void {
    if (request.url.startsWith("/health/")) return done();
    let target: Target;
    try {
      target = classify(request.method, request.url);
    } catch (err) {
      return done(err as Error);
    }
    request.target = target;
    const presented = policy.auth ? readPresentedKey(request.headers) : NO_KEY;
    if (!limiter || (target.kind === "api" && target.metrics)) return identify(request, reply, target, presented, done);
    const bucket = presented.kind === "key" ? presented.key.tenant : ANONYMOUS_BUCKET;
    limiter.take(bucket, presented.kind === "key" ? presented.key.tenant : tenant, (verdict) => {
      if (verdict === "refuse") {
        deps.gatewayMetrics?.rateLimited.inc({ bucket: bucket === ANONYMOUS_BUCKET ? "anonymous" : "tenant" });
        return done(new ServiceError("rate_limited", TOO_MANY, { headers: { "retry-after": "60" } }));
      }
      if (verdict === "degraded") deps.gatewayMetrics?.rateLimitDegraded.inc();
      identify(request, reply, target, presented, done);
    });
  }

  /** Finds whose request it is (a key from the cache or the auth service, or nobody), then decides it. */
  function identify(request: FastifyRequest, reply: FastifyReply, target: Target, presented: Presented, done: AdmissionDone): void {
    try {
      if (!policy.auth || presented.kind === "none") {
        authorize(policy, target, null, repositoryHeader(request), Date.now(), presented.kind === "none" && presented.notAKey ? NOT_A_KEY : KEY_REQUIRED);
        request.forwardedPrincipal = anonymousPrincipal;
        return done();
      }
      if (presented.kind === "malformed") {
        throw unauthenticated(target, "the key in Service-Repository-Key is malformed");
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
  }

  /** Admits a request that presents a key (null: unknown), forwarded as that key; throws the refusal. */
  function admitKey(request: FastifyRequest, target: Target, key: KeyRights | null): void {
    const from = decideKey(request, target, key);
    request.forwardedPrincipal = encodePrincipal({ kind: "key", tenant, id: key!.id });
    if (recordUse) recordUse(key!.id, from ?? clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], trustedProxies));
  }

  /** The key itself (tenant, revocation, expiry, allowlist), then its rights. Returns the client address when it was read. */
  function decideKey(request: FastifyRequest, target: Target, key: KeyRights | null): string | undefined {
    const now = Date.now();
    checkKey(target, key, tenant, now);
    let from: string | undefined;
    if (key.allowedFrom) {
      from = clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], trustedProxies);
      if (!key.allowedFrom(from)) throw new ServiceError("forbidden", `this key may not be used from ${from}`);
    }
    authorize(policy, target, key, repositoryHeader(request), now);
    return from;
  }

  /**
   * Whether `/health/ready` may show which dependency is down and why: to a key that would be
   * admitted to the deployment's meters (manage:read on *), by the same decision. A lookup that
   * fails shows no detail rather than failing the probe.
   */
  async function mayReadHealthDetail(request: FastifyRequest): Promise<boolean> {
    if (!policy.auth) return true;
    const presented = readPresentedKey(request.headers);
    if (presented.kind !== "key" || presented.key.tenant !== tenant) return false;
    const key = cache.peek(presented.key.id)?.value ?? (await cache.get(presented.key.id).catch(() => null));
    try {
      decideKey(request, HEALTH_DETAIL, key);
      return true;
    } catch {
      return false;
    }
  }

  return { admit, mayReadHealthDetail };
}

export type Admission = ReturnType<typeof admissionFactory>;

function repositoryHeader(request: FastifyRequest): string | undefined {
  const header = request.headers["service-repository-name"];
  return typeof header === "string" ? header : undefined;
}

/** 4. The key itself: known, of this tenant, not revoked, not expired. */
export function checkKey(target: Target, key: KeyRights | null, tenant: string, now: number): asserts key is KeyRights {
  if (!key) throw unauthenticated(target, UNKNOWN_KEY);
  if (key.tenant !== tenant) throw unauthenticated(target, "this key belongs to another tenant");
  if (key.revoked) throw unauthenticated(target, "this key has been revoked: ask an administrator for a new key");
  if (!(key.expiresAt > now)) throw unauthenticated(target, "this key has expired: ask an administrator for a new key (an expired key cannot be renewed)");
}

/**
 * 5. Decides a request. `key` is null for a keyless caller. Throws the refusal (401/403) the
 * caller should see; returns normally when the request may go on.
 */
export function authorize(
  policy: AccessPolicy,
  target: Target,
  key: KeyRights | null,
  repositoryHeader: string | undefined,
  now: number,
  noKeyMessage: string = KEY_REQUIRED,
): void {
  if (target.kind === "open") return;
  if (target.kind === "artifact" && target.write && policy.readOnly) {
    throw new ServiceError("forbidden", "this server is read-only (svc.read-only): writes are refused");
  }
  if (!policy.auth) return;

  const grants = key ? key.grants : undefined;
  let held = 0;
  let need: number;
  let what: string;

  if (target.kind === "artifact") {
    // The repository authorised against is the one the header names, never the one the route serves.
    let scopeRepo = "*";
    if (repositoryHeader !== undefined) {
      if (!isRepositoryName(repositoryHeader)) throw invalid("Service-Repository-Name", "Service-Repository-Name is not a valid repository name");
      if (repositoryHeader !== target.repository) {
        throw new ServiceError(
          "forbidden",
          `Service-Repository-Name names repository "${repositoryHeader}" but this request is for repository "${target.repository}"`,
        );
      }
      scopeRepo = repositoryHeader;
    }
    need = target.write ? Right.repositoryWrite : Right.repositoryRead;
    what = `${target.write ? "repository:write" : "repository:read"} on ${scopeRepo === "*" ? "* (no Service-Repository-Name header was sent)" : scopeRepo}`;
    held = rightsFor(policy.anonymous, scopeRepo, target.path, now);
    if (grants) held |= rightsFor(grants, scopeRepo, target.path, now);
  } else if (target.capabilities) {
    need = Right.repositoryRead | Right.manageRead;
    what = "a read right";
    held = anyRights(policy.anonymous, now);
    if (grants) held |= anyRights(grants, now);
    if ((held & need) !== 0) return;
    held = 0;
  } else {
    need = target.write ? Right.manageWrite : Right.manageRead;
    what = `${target.write ? "manage:write" : "manage:read"} on *`;
    held = deploymentRights(policy.anonymous, now);
    if (grants) held |= deploymentRights(grants, now);
  }

  if ((held & need) === need) return;
  if (!key) throw unauthenticated(target, noKeyMessage);
  throw new ServiceError("forbidden", `this key does not hold ${what}${target.kind === "artifact" ? heldElsewhere(key.grants, target, need, now) : ""}`);
}

/** Where a key does hold the right an artifact request lacked (a grant on another path prefix), so the refusal says which prefix it is for. */
function heldElsewhere(grants: readonly CompiledGrant[], target: Extract<Target, { kind: "artifact" }>, need: number, now: number): string {
  const scopes = grants
    .filter((g) => g.expiresAt > now && (g.bits & need) === need && (g.scope.repository === "*" || g.scope.repository === target.repository) && g.scope.prefix !== "")
    .map((g) => `${g.scope.repository}:${g.scope.prefix}`);
  return scopes.length ? ` (it holds that right only under ${scopes.slice(0, 5).join(", ")}${scopes.length > 5 ? ", …" : ""})` : "";
}
