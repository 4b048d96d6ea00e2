import type { FastifyReply, FastifyRequest } from "fastify";
import { CLIENT_ADDRESS_HEADER, CSRF_HEADER, KEY_LABEL_HEADER, MOUNT_SOURCE_HEADER, ServiceError, encodePrincipal, invalid } from "@svc/contracts";
import { Right, anyRights, compileGrants, deploymentRights, isRepositoryName, parseArtifactTarget, parseCacheTarget, rightsFor, type CompiledGrant, type GrantSpec } from "@svc/grants";
import { clientAddress, sendUnexpected, type AddressMatcher } from "@svc/kit";
import { readPresentedKey, type Presented } from "./key-reader.js";
import type { GatewayMetrics } from "./gateway-metrics.js";
import type { Bucket, Verdict } from "./rate-limiter.js";
import { personEntry, type KeyRights, type RightsCache } from "./rights-cache.js";
import { bearerChallenge, challengeScope, tokenAllows, type OciScope, type TokenSigner } from "./oci-token.js";
import { acceptsHtml, addressedHost, firstValue, isUnder, routedPath } from "./request-target.js";
import { csrfMatches, readSessionId, type Session, type SessionCache } from "./session-cache.js";

/*
 * The admission of every request, in the order it happens:
 *   0. the Host (or a trusted proxy's X-Forwarded-Host) is one valid host[:port], or 400;
 *   1. classify: what the request asks for (an artifact, a build cache's entry, the API, a
 *      console page, or nothing we guard);
 *   2. read the key it presents (a malformed Service-Repository-Key, or a key of another
 *      tenant, is refused unlooked-up); only when it presents none, its console session cookie
 *      (`svc_session`): a key always wins;
 *   3. identify: the key's rights from the cache, or from the auth service on a miss; then
 *      revocation, expiry and the source-address allowlist. A session: what it stands for from
 *      the session cache, or the console on a miss (an unknown or ended one counts as no
 *      session), then its person's rights from the same cache as keys, or the auth service;
 *   4. authorise: for a session, the anti-forgery token on a change and, on /repository/, the
 *      Deploy switch (svc.ui.deploy); then read-only, then the right the target needs, from the
 *      key's or person's grants and the keyless caller's (svc.anonymous-rights). A console page
 *      needs no right: the console decides what to show to whom;
 *   5. rate limit (health probes and metric scrapes never are): the tenant's bucket for a key
 *      that passed step 3 or a person, the keyless bucket for everything else, so a made-up key
 *      cannot spend the tenant's allowance; a 429 replaces the decision of steps 2-4;
 *   6. the principal the request is forwarded as (`key:`, `person:` or `anonymous:`).
 * Health detail is decided by the same steps 2, 4 and 5. packages/grants holds the grant
 * grammar and the rights arithmetic; what to require of whom is decided here only.
 */

declare module "fastify" {
  interface FastifyRequest {
    /** The signed identity to forward upstream (`kind:tenant:id`). */
    forwardedPrincipal: string;
    /** Who a refused request was identified as, for the access log (set for console sessions). */
    claimedPrincipal: string;
    target: Target;
    /** The admitted key's or person's rights, null for a keyless caller (the OCI token endpoint grants from them). */
    callerRights: KeyRights | null;
  }
}

// 1. What a request asks for, read from its method and path.

export type Target =
  | {
      kind: "artifact";
      repository: string;
      path: string;
      write: boolean;
      /** Authorised against the repository the path names (OCI clients cannot send Service-Repository-Name). */
      pathScoped?: true;
      /** `GET /v2/`, the OCI ping: any identified caller (or a keyless one when anonymous rights read anything). */
      ping?: true;
    }
  /** A build cache's entry (`/cache/<cache>/<key>`): cache:read or cache:write on the cache. */
  | { kind: "cache"; cache: string; path: string; write: boolean }
  | { kind: "api"; write: boolean; capabilities: boolean; credentialId: string | undefined; metrics: boolean; whoami?: true; people?: boolean }
  | { kind: "console" }
  /** `GET /v2/token`, the OCI token endpoint (routes/oci-token-route.ts): identified here, answered with what the caller holds. */
  | { kind: "token" }
  | { kind: "open" };

/** An npm audit's request (npm 7's bulk endpoint; npm 6's, which pnpm and yarn 1 use), relative to a repository. */
const NPM_AUDIT = /^-\/npm\/v1\/security\/(?:advisories\/bulk|audits(?:\/quick)?)$/;
const NPM_WEB_LOGIN = "-/v1/login";
const NPM_COUCH_LOGIN = "-/user/";
const LOGIN_POLL = /^\/api\/logins\/[^/]+$/;
const CREDENTIAL_PATH = /^\/api\/credentials\/([0-9a-f]{64})(?:\/|$)/;

/**
 * Decided on the path the router routes on (request-target.ts), never on the raw text: a
 * target that would be routed to a guarded prefix is guarded, however it is spelt. Throws the
 * 400 for a target the router and the proxy could read differently. `/` is the console's for
 * a client that asks for HTML (a browser), and what it always was for any other.
 */
export function classify(method: string, url: string, accept?: string | string[]): Target {
  const path = routedPath(url);
  const write = method !== "GET" && method !== "HEAD";
  if (isUnder(path, "/ui") || isUnder(path, "/login") || path === "/logout" || path === "/favicon.ico" || (path === "/" && !write && acceptsHtml(accept))) return CONSOLE;
  if (isUnder(path, "/v2")) return ociTarget(method, url, path, write);
  if (isUnder(path, "/repository")) {
    // The artifact path is read from the raw target, segment by segment; its prefix must be plain.
    // A folder (a trailing slash: pip's index pages, twine's upload URL) passes; the repository's
    // format decides whether it serves one.
    if (!url.startsWith("/repository")) throw invalid("path", "the /repository prefix must not be percent-encoded");
    const a = parseArtifactTarget(url);
    // npm's login, before npm holds any key: the web login's start (routes/npm-login-route.ts),
    // and the legacy name-and-password login, answered with the way to the web login.
    if ((method === "POST" && a.path === NPM_WEB_LOGIN) || a.path.startsWith(NPM_COUCH_LOGIN)) return OPEN;
    // npm's audit is a POST that reads: it asks about installed versions and changes nothing.
    return { kind: "artifact", repository: a.repository, path: a.path, write: write && !(method === "POST" && NPM_AUDIT.test(a.path)) };
  }
  if (isUnder(path, "/cache")) {
    if (!url.startsWith("/cache")) throw invalid("path", "the /cache prefix must not be percent-encoded");
    const c = parseCacheTarget(url);
    return { kind: "cache", cache: c.cache, path: c.key, write };
  }
  // Who am I: any identified caller, whatever it holds. So are a person's own keys
  // (/api/me/credentials: the auth service takes only a signed-in person, and only their keys).
  if (path === "/api/me" && !write) return WHOAMI;
  if (path.startsWith("/api/me/")) return write ? OWN_KEYS_WRITE : WHOAMI;
  // A command-line sign-in (svc login) is started and polled before its client holds any key:
  // the poll's secret, in its path, is what it proves (the auth service's login-routes.ts).
  if ((path === "/api/logins" && method === "POST") || (method === "GET" && LOGIN_POLL.test(path))) return OPEN;
  if (isUnder(path, "/api")) {
    return {
      kind: "api",
      write,
      capabilities: path === "/api/capabilities",
      credentialId: CREDENTIAL_PATH.exec(path)?.[1],
      metrics: false,
      people: isUnder(path, "/api/principals") || isUnder(path, "/api/groups"),
    };
  }
  // The deployment's meters: manage:read over * (of this, the operator's, tenant), like /api/.
  if (isUnder(path, "/metrics")) return { kind: "api", write, capabilities: false, credentialId: undefined, metrics: true };
  return OPEN;
}

/**
 * The OCI distribution API (`/v2/<repository>/<name…>/{blobs,manifests,tags,referrers}/…`): an
 * artifact target of the repository its first segment names, the rest its path (so a grant's
 * path prefix covers image names), authorised against that repository. `GET /v2/` is the ping;
 * `/v2/_catalog` lists every repository's images, so it needs a right over `*`.
 */
function ociTarget(method: string, url: string, path: string, write: boolean): Target {
  if (path === "/v2/token") return TOKEN;
  if (path === "/v2" || path === "/v2/") return { kind: "artifact", repository: "*", path: "", write, pathScoped: true, ping: true };
  if (path === "/v2/_catalog") return { kind: "artifact", repository: "*", path: "", write, pathScoped: true };
  if (!url.startsWith("/v2/")) throw invalid("path", "the /v2 prefix must not be percent-encoded");
  const a = parseArtifactTarget(`/repository/${url.slice("/v2/".length)}`);
  return { kind: "artifact", repository: a.repository, path: a.path, write, pathScoped: true };
}

const OPEN: Target = { kind: "open" };
const TOKEN: Target = { kind: "token" };
const CONSOLE: Target = { kind: "console" };
const WHOAMI: Target = { kind: "api", write: false, capabilities: false, credentialId: undefined, metrics: false, whoami: true };
const OWN_KEYS_WRITE: Target = { ...WHOAMI, write: true };

/** Health detail (which dependency is down, and why) asks what reading the meters asks: manage:read on *. */
const HEALTH_DETAIL: Target = { kind: "api", write: false, capabilities: false, credentialId: undefined, metrics: true };

// The deployment's rules: svc.auth, svc.read-only, svc.anonymous-rights.

export interface AccessPolicy {
  auth: boolean;
  readOnly: boolean;
  anonymous: CompiledGrant[];
  /** svc.ui.deploy: whether a console session may write to /repository/. */
  deployByCookie: boolean;
  /** svc.repository-scope-from-path: without Service-Repository-Name, authorise against the repository the path names instead of `*`. */
  scopeFromPath: boolean;
  /** The same for one repository, its own `scopeFromPath` (repository-scopes.ts), whatever the setting. */
  repositoryFromPath: (repository: string) => boolean;
}

export function accessPolicy(s: {
  auth: boolean;
  readOnly: boolean;
  anonymousRights: GrantSpec[];
  uiDeploy?: boolean;
  repositoryScopeFromPath?: boolean;
  repositoryFromPath?: (repository: string) => boolean;
}): AccessPolicy {
  return {
    auth: s.auth,
    readOnly: s.readOnly,
    anonymous: compileGrants(s.anonymousRights),
    deployByCookie: s.uiDeploy ?? false,
    scopeFromPath: s.repositoryScopeFromPath === true,
    repositoryFromPath: s.repositoryFromPath ?? (() => false),
  };
}

/** The one Basic challenge: artifact clients (Maven, docker login) answer it with the key as password. */
export const BASIC_CHALLENGE: Readonly<Record<string, string>> = { "www-authenticate": 'Basic realm="artifact repository", charset="UTF-8"' };

/** 401, with a Basic challenge on artifact paths and a bare 401 on /api/ (no browser dialog). */
export function unauthenticated(target: Target, message: string): ServiceError {
  return new ServiceError("unauthenticated", message, target.kind === "artifact" || target.kind === "cache" || target.kind === "token" ? { headers: BASIC_CHALLENGE } : {});
}

export const KEY_REQUIRED = "a key is required: send it in Service-Repository-Key, as a Bearer token, or as the Basic password";
/** Authorization held something, but not a key: say so rather than ask for one. */
export const NOT_A_KEY =
  "the Authorization header does not hold a well-formed key (svck_…): send the key as a Bearer token, as the Basic password, or in Service-Repository-Key";
/** A session cookie that stands for no session (forged, ended, past its lifetime or idle timeout): as if none had been sent. */
export const SESSION_ENDED = "your console session has ended or is not valid: sign in again at /login, or send a key";
export const CSRF_REFUSED = `a change made with a console session must carry the ${CSRF_HEADER} header holding the session's anti-forgery token: reload the page and try again`;
export const DEPLOY_OFF = "publishing with a console session is switched off (svc.ui.deploy=false): send a key, or ask an administrator to switch Deploy on";
export const TOKEN_REFUSED = "the Bearer token is not valid here or has expired: ask the token endpoint (/v2/token) for a new one";
export const TOKEN_SCOPE = "the Bearer token does not allow this: ask the token endpoint for a token with the scope the challenge names";
const UNKNOWN_KEY = "unknown key: it was not minted here or has been deleted; check it was copied whole, or ask an administrator for a new key";
const NO_KEY: Presented = { kind: "none" };
const TOO_MANY = "too many requests for this tenant: slow down and retry after a minute";

export interface AdmissionDeps {
  tenant: string;
  policy: AccessPolicy;
  /** Rights of keys and of persons (by personEntry(id)). */
  cache: Pick<RightsCache, "peek" | "get">;
  /** Console sessions by id; undefined: session cookies are not read (no console). */
  sessions?: Pick<SessionCache, "peek" | "get">;
  /** The rate limit on the tenant's buckets (Redis), or undefined when none is configured at all. */
  limiter?: { take(bucket: Bucket, then: (verdict: Verdict) => void): void };
  gatewayMetrics?: Pick<GatewayMetrics, "rateLimited" | "rateLimitDegraded">;
  /** Proxies whose X-Forwarded-For is believed (svc.trusted-proxies). */
  trustedProxies: AddressMatcher;
  /** Records each use of a key (svc.track-key-usage), or undefined when off. */
  recordUse?: (keyId: string, address: string) => void;
  /** Signs and checks OCI tokens (oci-token.ts); undefined: Bearer tokens are not read. */
  tokens?: Pick<TokenSigner, "verify">;
}

/** Fastify's hook callback: no argument to go on, the refusal to stop. */
export type AdmissionDone = (err?: Error) => void;

/** The label of svc_gateway_rate_limited_total for each bucket. */
const BUCKET_LABEL: Record<Bucket, string> = { tenant: "tenant", keyless: "anonymous", reserve: "reserve" };

export function admissionFactory(deps: AdmissionDeps) {
  const { tenant, policy, cache, sessions, limiter, trustedProxies, recordUse } = deps;
  const anonymousPrincipal = encodePrincipal({ kind: "anonymous", tenant, id: "" });

  /**
   * The onRequest hook: classifies, identifies, limits and authorises a request before anything
   * is proxied, and sets `target` and `forwardedPrincipal`. Calls done() to go on or done(err)
   * with the refusal; a failed key lookup is answered 500 here. A callback, not a promise: this
   * runs for every request, and a cache hit stays synchronous.
   */
  function admit(request: FastifyRequest, reply: FastifyReply, done: AdmissionDone): void {
    let target: Target;
    try {
      // Every route, probes included: the gateway is the only door, and an upstream makes URLs from the host.
      addressedHost(request.raw, trustedProxies(request.socket.remoteAddress ?? ""));
      if (request.url.startsWith("/health/")) return done();
      target = classify(request.method, request.url, request.headers.accept);
    } catch (err) {
      return done(err as Error);
    }
    request.target = target;
    // Only the gateway says which mount source a caller may read (admitMount below).
    if (request.headers[MOUNT_SOURCE_HEADER] !== undefined) delete request.headers[MOUNT_SOURCE_HEADER];
    // Only the gateway says where a request came from and which key label it bears (settle below).
    if (request.headers[CLIENT_ADDRESS_HEADER] !== undefined) delete request.headers[CLIENT_ADDRESS_HEADER];
    if (request.headers[KEY_LABEL_HEADER] !== undefined) delete request.headers[KEY_LABEL_HEADER];
    if (policy.auth && target.kind === "artifact" && target.pathScoped) done = withBearerChallenge(request, reply, target, done);
    const presented = policy.auth ? readPresentedKey(request.headers) : NO_KEY;
    if (presented.kind === "none") {
      const token = presented.notAKey && target.kind === "artifact" && target.pathScoped ? bearerToken(request.headers.authorization) : undefined;
      if (token !== undefined) return admitToken(request, reply, target, token, done);
      const sessionId = policy.auth && sessions ? readSessionId(request.headers.cookie) : undefined;
      if (sessionId !== undefined) return admitSession(request, reply, target, sessionId, done);
      // Refused without a lookup, and never by the name of a tenant the key claims: the keyless bucket.
      return decide(request, target, undefined, undefined, done, presented.notAKey === true ? NOT_A_KEY : KEY_REQUIRED);
    }
    if (presented.kind === "malformed") return decide(request, target, undefined, unauthenticated(target, "the key in Service-Repository-Key is malformed"), done);
    const parsed = presented.key;
    if (parsed.tenant !== tenant) return decide(request, target, undefined, unauthenticated(target, "this key belongs to another tenant"), done);
    const hit = cache.peek(parsed.id);
    if (hit) return decide(request, target, hit.value, undefined, done);
    cache.get(parsed.id).then((key) => decide(request, target, key, undefined, done), lookupFailed(request, reply, done));
  }

  /**
   * Steps 2-3 for an OCI token (`Authorization: Bearer <token>` on /v2/ only): a token this
   * deployment signed, not expired, of this tenant; then the key or person it was issued to, from
   * the cache like a key's (so a revoked key's tokens go with it), and in decide() the request
   * must be one the token's scopes allow as well as one its holder's rights allow.
   */
  function admitToken(request: FastifyRequest, reply: FastifyReply, target: Target, token: string, done: AdmissionDone): void {
    const claims = deps.tokens?.verify(token, tenant, Date.now());
    if (!claims) return decide(request, target, undefined, unauthenticated(target, TOKEN_REFUSED), done);
    if (claims.kind === "anonymous") return decide(request, target, undefined, undefined, done, KEY_REQUIRED, undefined, claims.scopes);
    const entry = claims.kind === "person" ? personEntry(claims.id) : claims.id;
    const hit = cache.peek(entry);
    if (hit) return decide(request, target, hit.value, undefined, done, KEY_REQUIRED, undefined, claims.scopes);
    cache.get(entry).then((key) => decide(request, target, key, undefined, done, KEY_REQUIRED, undefined, claims.scopes), lookupFailed(request, reply, done));
  }

  /**
   * A 401 on /v2/ challenges the way container clients expect: Bearer first (the token flow,
   * realm the origin the client addressed), then Basic for clients that only speak that.
   */
  function withBearerChallenge(request: FastifyRequest, reply: FastifyReply, target: Extract<Target, { kind: "artifact" }>, done: AdmissionDone): AdmissionDone {
    return (err) => {
      if (!(err instanceof ServiceError) || err.status !== 401) return done(err);
      const viaProxy = trustedProxies(request.socket.remoteAddress ?? "");
      const host = addressedHost(request.raw, viaProxy) ?? "localhost";
      const proto = (viaProxy ? firstValue(request.headers["x-forwarded-proto"]) : undefined) ?? ((request.socket as { encrypted?: boolean }).encrypted ? "https" : "http");
      const origin = `${proto === "https" ? "https" : "http"}://${host}`;
      const scope = target.ping ? undefined : challengeScope(target.repository, target.path, target.write);
      reply.header("www-authenticate", [bearerChallenge(origin, host, scope), BASIC_CHALLENGE["www-authenticate"]!]);
      done(new ServiceError(err.code, err.message));
    };
  }

  /** A lookup that failed (auth service, console): 500, after the keyless bucket, like every request not known to be a usable key's. */
  function lookupFailed(request: FastifyRequest, reply: FastifyReply, done: AdmissionDone) {
    return (err: unknown) => {
      if (!limiter) return sendUnexpected(request, reply, err);
      limiter.take("keyless", (verdict) => (verdict === "refuse" ? done(tooMany("keyless")) : sendUnexpected(request, reply, err)));
    };
  }

  /**
   * Steps 2-3 for a session cookie: the session, then its person's rights, each from its cache
   * synchronously when there. A session unknown, ended, past its end or of another tenant is
   * no session: the request goes on as a keyless caller's (a console page then offers sign-in).
   */
  function admitSession(request: FastifyRequest, reply: FastifyReply, target: Target, sessionId: string, done: AdmissionDone): void {
    const withSession = (session: Session | null) => {
      if (!session || session.tenant !== tenant) return decide(request, target, undefined, undefined, done, SESSION_ENDED);
      request.claimedPrincipal = encodePrincipal({ kind: "person", tenant, id: session.personId });
      const entry = personEntry(session.personId);
      const hit = cache.peek(entry);
      if (hit) return decide(request, target, hit.value, undefined, done, KEY_REQUIRED, session);
      cache.get(entry).then((person) => decide(request, target, person, undefined, done, KEY_REQUIRED, session), lookupFailed(request, reply, done));
    };
    if (sessionId === "") return withSession(null);
    const hit = sessions!.peek(sessionId);
    if (hit) return withSession(hit.value);
    sessions!.get(sessionId).then(withSession, lookupFailed(request, reply, done));
  }

  /**
   * Decides a request once its key (or its session's person) is known: `key` is undefined for a
   * keyless caller (or one refused already, with `refusal`), null for a key nobody minted;
   * `session` is set when the person came from a session cookie. The decision is made first
   * and charged after, so that the bucket is the right one: the tenant's only for a key that
   * exists, is active and may be used from where it is, or a signed-in person; every other
   * request, the keyless bucket. A request over its bucket is answered 429 whatever the
   * decision was.
   */
  function decide(
    request: FastifyRequest,
    target: Target,
    key: KeyRights | null | undefined,
    refusal: Error | undefined,
    done: AdmissionDone,
    noKey = KEY_REQUIRED,
    session?: Session,
    tokenScopes?: readonly OciScope[],
  ): void {
    let bucket: Bucket = "keyless";
    let from: string | undefined;
    if (refusal === undefined) {
      try {
        const now = Date.now();
        if (key !== undefined) {
          from = usableKey(request, target, key, now);
          bucket = "tenant";
        }
        if (session) cookieRules(target, session, request.headers[CSRF_HEADER]);
        // The holder's rights first: a request they do not allow is refused as it is with Basic
        // (403 naming the right), since no token would help; one they allow but the token's
        // scopes do not is answered 401 with the challenge, for the client to ask for a new token.
        authorize(policy, target, key ?? null, repositoryHeader(request), now, noKey);
        if (tokenScopes) checkTokenScope(target, tokenScopes);
        if (target.kind === "artifact" && target.pathScoped && request.method === "POST") admitMount(request, key ?? null, tokenScopes, now);
      } catch (err) {
        refusal = err as Error;
      }
    }
    // Metric scrapes are never limited (health probes never reach admission's limit either).
    if (!limiter || (target.kind === "api" && target.metrics)) return settle(request, key, from, refusal, done);
    limiter.take(bucket, (verdict) => {
      // An administrator's request the tenant's bucket refused draws on the reserve, so busy
      // builds (or an override set too low) never lock administration out.
      if (verdict === "refuse" && bucket === "tenant" && refusal === undefined && target.kind === "api" && !target.capabilities && !target.whoami) {
        return limiter.take("reserve", (v) => charged(request, key, from, refusal, "reserve", v, done));
      }
      charged(request, key, from, refusal, bucket, verdict, done);
    });
  }

  function charged(request: FastifyRequest, key: KeyRights | null | undefined, from: string | undefined, refusal: Error | undefined, bucket: Bucket, verdict: Verdict, done: AdmissionDone): void {
    if (verdict === "refuse") return done(tooMany(bucket));
    if (verdict === "degraded") deps.gatewayMetrics?.rateLimitDegraded.inc();
    settle(request, key, from, refusal, done);
  }

  function tooMany(bucket: Bucket): ServiceError {
    deps.gatewayMetrics?.rateLimited.inc({ bucket: BUCKET_LABEL[bucket] });
    return new ServiceError("rate_limited", TOO_MANY, { headers: { "retry-after": "60" } });
  }

  /**
   * An OCI cross-repository mount (`POST …/blobs/uploads/?mount=<digest>&from=<repository>/<image>`):
   * when the caller may read the source (its rights, and a token's scopes when it came with one),
   * the signed MOUNT_SOURCE_HEADER names it, and the artifacts service mounts from it; otherwise
   * the request goes on without, and is answered as a plain upload.
   */
  function admitMount(request: FastifyRequest, key: KeyRights | null, tokenScopes: readonly OciScope[] | undefined, now: number): void {
    const q = new URLSearchParams(request.url.split("?")[1] ?? "");
    const from = q.get("from");
    if (from === null || !q.has("mount") || !/^[A-Za-z0-9._/-]+$/.test(from)) return;
    const slash = from.indexOf("/");
    if (slash <= 0) return;
    const repository = from.slice(0, slash);
    const path = `${from.slice(slash + 1)}/blobs/`;
    if (tokenScopes && !tokenAllows(tokenScopes, repository, path, false)) return;
    let held = rightsFor(policy.anonymous, repository, path, now);
    if (key) held |= rightsFor(key.grants, repository, path, now);
    if (!policy.auth || (held & Right.repositoryRead) !== 0) request.headers[MOUNT_SOURCE_HEADER] = from;
  }

  /** Hands the decision to Fastify: the refusal, or the principal the request is forwarded as. */
  function settle(request: FastifyRequest, key: KeyRights | null | undefined, from: string | undefined, refusal: Error | undefined, done: AdmissionDone): void {
    if (refusal !== undefined) return done(refusal);
    request.callerRights = key ?? null;
    // API calls (the changes the audit trail records) carry the client address and the key's
    // label to the upstream, signed; so do console pages, whose API calls pass the address on.
    // The artifact hot path is spared the work.
    const kind = request.target?.kind;
    if (kind === "api" || kind === "console") {
      from ??= clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], trustedProxies);
      request.headers[CLIENT_ADDRESS_HEADER] = from;
      if (key?.label !== undefined) request.headers[KEY_LABEL_HEADER] = encodeURIComponent(key.label);
    }
    if (!key) {
      request.forwardedPrincipal = anonymousPrincipal;
      return done();
    }
    request.forwardedPrincipal = encodePrincipal({ kind: key.kind ?? "key", tenant, id: key.id });
    if (recordUse && key.kind === undefined) recordUse(key.id, from ?? clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], trustedProxies));
    done();
  }

  /**
   * What a session cookie alone may not do, whatever the person's rights: change state on the
   * API or the store without the session's anti-forgery token (a browser sends the cookie with a
   * forged cross-site request too), or publish while Deploy is off. Console pages check their
   * own forms.
   */
  function cookieRules(target: Target, session: Session, csrf: string | string[] | undefined): void {
    if ((target.kind !== "api" && target.kind !== "artifact" && target.kind !== "cache") || !target.write) return;
    if (!csrfMatches(session, csrf)) throw new ServiceError("forbidden", CSRF_REFUSED);
    if (target.kind === "artifact" && !policy.deployByCookie) throw new ServiceError("forbidden", DEPLOY_OFF);
  }

  /** The key itself (tenant, revocation, expiry, allowlist); throws the refusal. Returns the client address when it was read. */
  function usableKey(request: FastifyRequest, target: Target, key: KeyRights | null, now: number): string | undefined {
    checkKey(target, key, tenant, now);
    if (!key.allowedFrom) return undefined;
    const from = clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], trustedProxies);
    if (!key.allowedFrom(from)) throw new ServiceError("forbidden", `this key may not be used from ${from}`);
    return from;
  }

  /** The key itself, then its rights. Returns the client address when it was read. */
  function decideKey(request: FastifyRequest, target: Target, key: KeyRights | null): string | undefined {
    const now = Date.now();
    const from = usableKey(request, target, key, now);
    authorize(policy, target, key, repositoryHeader(request), now);
    return from;
  }

  /**
   * Whether `/health/ready` may show which dependency is down and why: to a key, or a signed-in
   * person, that would be admitted to the deployment's meters (manage:read on *), by the same decision. A lookup that
   * fails shows no detail rather than failing the probe.
   */
  async function mayReadHealthDetail(request: FastifyRequest): Promise<boolean> {
    if (!policy.auth) return true;
    const presented = readPresentedKey(request.headers);
    let key: KeyRights | null;
    if (presented.kind === "key") {
      if (presented.key.tenant !== tenant) return false;
      key = cache.peek(presented.key.id)?.value ?? (await cache.get(presented.key.id).catch(() => null));
    } else {
      // A signed-in person holding manage:read on * sees the detail too (the console's Metrics page).
      const sessionId = presented.kind === "none" && sessions ? readSessionId(request.headers.cookie) : undefined;
      if (!sessionId) return false;
      const session = sessions!.peek(sessionId)?.value ?? (await sessions!.get(sessionId).catch(() => null));
      if (!session || session.tenant !== tenant) return false;
      const entry = personEntry(session.personId);
      key = cache.peek(entry)?.value ?? (await cache.get(entry).catch(() => null));
    }
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
  if (target.kind === "open" || target.kind === "console") return;
  // The token endpoint serves a keyless caller too (an anonymous token), but not a password that is no key.
  if (target.kind === "token") {
    if (!key && policy.auth && noKeyMessage === NOT_A_KEY) throw unauthenticated(target, NOT_A_KEY);
    return;
  }
  if ((target.kind === "artifact" || target.kind === "cache") && target.write && policy.readOnly) {
    throw new ServiceError("forbidden", "this server is read-only (svc.read-only): writes are refused");
  }
  if (!policy.auth) return;

  const grants = key ? key.grants : undefined;
  let held = 0;
  let need: number;
  let what: string;

  if (target.kind === "artifact" && target.ping) {
    // The OCI ping asks who the caller is, not for a right: a key that passed step 3, or a keyless
    // caller when anonymous rights read something (a public registry).
    if (key || (anyRights(policy.anonymous, now) & Right.repositoryRead) !== 0) return;
    throw unauthenticated(target, noKeyMessage);
  }
  if (target.kind === "artifact") {
    // The repository authorised against is the one the header names, never the one the route
    // serves; without the header, `*`, or (opted in, deployment-wide or by the repository) the
    // repository the path names, never another.
    let scopeRepo = policy.scopeFromPath || target.pathScoped || policy.repositoryFromPath(target.repository) ? target.repository : "*";
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
    held = rightsFor(policy.anonymous, scopeRepo, target.path, now);
    if (grants) held |= rightsFor(grants, scopeRepo, target.path, now);
    let why = repositoryHeader !== undefined ? "" : scopeRepo === "*" ? " (no Service-Repository-Name header was sent)" : " (the repository the path names)";
    // A key that holds the right on the repository itself lacks only the way to say so: the
    // remedy is the header or the repository's own option, never a wider grant.
    if (scopeRepo === "*" && target.repository !== "*" && grants && (rightsFor(grants, target.repository, target.path, now) & need) === need) {
      why = ` (no Service-Repository-Name header was sent, and repository ${target.repository} is not authorised by its path: send "Service-Repository-Name: ${target.repository}", or have an administrator switch on its scopeFromPath)`;
    }
    what = `${target.write ? "repository:write" : "repository:read"} on ${scopeRepo}${why}`;
  } else if (target.kind === "cache") {
    // The cache the path names is the scope, as a repository is (a build tool cannot always send
    // Service-Repository-Name: Gradle cannot); a header that names another cache is refused.
    if (repositoryHeader !== undefined && repositoryHeader !== target.cache) {
      throw new ServiceError("forbidden", `Service-Repository-Name names "${repositoryHeader}" but this request is for build cache "${target.cache}"`);
    }
    need = target.write ? Right.cacheWrite : Right.cacheRead;
    what = `${target.write ? "cache:write" : "cache:read"} on build cache ${target.cache}`;
    held = rightsFor(policy.anonymous, target.cache, target.path, now);
    if (grants) held |= rightsFor(grants, target.cache, target.path, now);
  } else if (target.whoami) {
    // A key that passed step 3, or a signed-in person: nothing more is needed.
    if (key) return;
    throw unauthenticated(target, noKeyMessage);
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
  const holder = key.kind === "person" ? `person ${key.id}` : "this key";
  throw new ServiceError("forbidden", `${holder} does not hold ${what}${target.kind === "artifact" ? heldElsewhere(key.grants, target, need, now) : ""}`);
}

/** A request made with an OCI token: the ping, or an image's request (or the catalog's) its scopes allow. */
export function checkTokenScope(target: Target, scopes: readonly OciScope[]): void {
  if (target.kind !== "artifact" || !target.pathScoped) throw new ServiceError("unauthenticated", TOKEN_REFUSED);
  if (target.ping) return;
  if (!tokenAllows(scopes, target.repository, target.path, target.write)) throw new ServiceError("unauthenticated", TOKEN_SCOPE);
}

/** The value of `Authorization: Bearer <value>`, or undefined. */
function bearerToken(auth: string | string[] | undefined): string | undefined {
  if (typeof auth !== "string") return undefined;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(auth);
  return m?.[1];
}

/** Where a key does hold the right an artifact request lacked (a grant on another path prefix), so the refusal says which prefix it is for. */
function heldElsewhere(grants: readonly CompiledGrant[], target: Extract<Target, { kind: "artifact" }>, need: number, now: number): string {
  const scopes = grants
    .filter((g) => g.expiresAt > now && (g.bits & need) === need && (g.scope.repository === "*" || g.scope.repository === target.repository) && g.scope.prefix !== "")
    .map((g) => `${g.scope.repository}:${g.scope.prefix}`);
  return scopes.length ? ` (it holds that right only under ${scopes.slice(0, 5).join(", ")}${scopes.length > 5 ? ", …" : ""})` : "";
}
