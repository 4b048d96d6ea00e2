// The admission decision, case by case, without starting a process: what each caller gets
// (status, message, Basic challenge) or the principal the request is forwarded as. Over 400
// lines on purpose: one set of tables for the one decision, keys and console sessions side by side.
import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ServiceError } from "@svc/contracts";
import { compileGrants, parseTokens, type GrantSpec } from "@svc/grants";
import { makeKey, parseKey } from "@svc/keys";
import { addressMatcher } from "@svc/kit";
import { CSRF_REFUSED, DEPLOY_OFF, SESSION_ENDED, accessPolicy, admissionFactory, type AdmissionDeps } from "./admission.js";
import { PERSON_ENTRY, rightsCacheFactory, type KeyRights } from "./rights-cache.js";
import { sessionCacheFactory, type Session } from "./session-cache.js";
import type { Bucket, Verdict } from "./rate-limiter.js";

const NOW = Date.now();
const ART = "/repository/default/libs/com/acme/app.jar";
const CACHE = "/cache/ci/0f530ffd62cae5b290535e90c9247459";
const REQUIRED = "a key is required: send it in Service-Repository-Key, as a Bearer token, or as the Basic password";
// Issue 12: a refusal says what was wrong with what was sent and what to do next.
const NOT_A_KEY = "the Authorization header does not hold a well-formed key (svck_…): send the key as a Bearer token, as the Basic password, or in Service-Repository-Key";
const UNKNOWN = "unknown key: it was not minted here or has been deleted; check it was copied whole, or ask an administrator for a new key";
const REVOKED = "this key has been revoked: ask an administrator for a new key";
const EXPIRED = "this key has expired: ask an administrator for a new key (an expired key cannot be renewed)";

const keys = new Map<string, KeyRights>();
/** Roles expanded to right tokens, as the auth service stores them. */
const expanded = (tokens: string[]) => (parseTokens(tokens) as { ok: true; tokens: string[] }).tokens;
/** A key the auth service knows, holding `grants`. */
function minted(grants: { scope: string; tokens: string[] }[], extra: Partial<KeyRights> = {}): string {
  const key = makeKey("default");
  const id = (parseKey(key) as { ok: true; key: { id: string } }).key.id;
  keys.set(id, { id, tenant: "default", revoked: false, expiresAt: Infinity, allowedFrom: null, grants: compileGrants(grants.map((g) => ({ scope: g.scope, tokens: expanded(g.tokens), expires: null }))), ...extra });
  return key;
}
const idOf = (key: string) => (parseKey(key) as { ok: true; key: { id: string } }).key.id;

const admin = minted([{ scope: "*", tokens: ["*"] }]);
const nothing = minted([]);
const namedReader = minted([{ scope: "default", tokens: ["read-only"] }]);
const wildReader = minted([{ scope: "*", tokens: ["repository:read"] }]);
const prefixDeployer = minted([{ scope: "default:libs/com/acme", tokens: ["deploy"] }]);
const otherDeployer = minted([{ scope: "other", tokens: ["deploy"] }]);
const starDeployer = minted([{ scope: "*", tokens: ["deploy"] }]);
const manageReader = minted([{ scope: "*", tokens: ["manage:read"] }]);
const scopedManager = minted([{ scope: "default", tokens: ["manage:*"] }]);
const revoked = minted([{ scope: "*", tokens: ["*"] }], { revoked: true });
const expired = minted([{ scope: "*", tokens: ["*"] }], { expiresAt: NOW - 1000 });
const allowlisted = minted([{ scope: "*", tokens: ["*"] }], { allowedFrom: addressMatcher(["10.0.0.0/8"]) });
const lapsedWild = minted([{ scope: "*", tokens: ["*"] }], {
  grants: compileGrants([{ scope: "*", tokens: ["*"], expires: new Date(NOW - 1000).toISOString() }]),
});
const wildCacheReader = minted([{ scope: "*", tokens: ["cache:read"] }]);
const wildRepositoryDeployer = minted([{ scope: "*", tokens: ["repository:*"] }]);
const ciDeployer = minted([{ scope: "ci", tokens: ["deploy"] }]);
const unknown = makeKey("default");
const otherTenant = makeKey("othertenant");
const malformed = admin.slice(0, -2) + "AA";
const LOOKUP_FAILS = makeKey("default");

type Mode = "enforcing" | "read-only" | "anonymous-read" | "anonymous-one-repository" | "open" | "scope-from-path" | "default-by-path";
const POLICIES: Record<Mode, { auth: boolean; readOnly: boolean; anonymousRights: GrantSpec[]; repositoryScopeFromPath?: boolean; repositoryFromPath?: (r: string) => boolean }> = {
  "scope-from-path": { auth: true, readOnly: false, anonymousRights: [], repositoryScopeFromPath: true },
  // The repository `default` has its own scopeFromPath on; the setting is off.
  "default-by-path": { auth: true, readOnly: false, anonymousRights: [], repositoryFromPath: (r) => r === "default" },
  enforcing: { auth: true, readOnly: false, anonymousRights: [] },
  "read-only": { auth: true, readOnly: true, anonymousRights: [] },
  "anonymous-read": { auth: true, readOnly: false, anonymousRights: [{ scope: "*", tokens: ["repository:read"] }] },
  "anonymous-one-repository": { auth: true, readOnly: false, anonymousRights: [{ scope: "default", tokens: ["repository:read"] }] },
  open: { auth: false, readOnly: false, anonymousRights: [] },
};

function admission(mode: Mode, extra: Partial<AdmissionDeps> = {}) {
  const lookup = async (id: string) => {
    if (id === idOf(LOOKUP_FAILS)) throw new Error("the auth service did not answer");
    return keys.get(id) ?? null;
  };
  return admissionFactory({
    tenant: "default",
    policy: accessPolicy(POLICIES[mode]),
    cache: rightsCacheFactory({ ttlMs: 60_000, lookup }),
    trustedProxies: addressMatcher([]),
    ...extra,
  });
}

type Outcome = { admittedAs: string } | { status: number; message: string; challenge: boolean; headers?: Record<string, string> };

/** Runs one request through the onRequest hook. */
function run(a: ReturnType<typeof admission>, method: string, url: string, headers: Record<string, string> = {}, from = "127.0.0.1"): Promise<Outcome> {
  const request = { method, url, headers, raw: { headers, rawHeaders: [] }, socket: { remoteAddress: from }, forwardedPrincipal: "", log: { error() {} } };
  return new Promise((resolve) => {
    // Only a failed key lookup answers by itself (500, with a reference): the rest is handed to done.
    const sent: Record<string, unknown> = {};
    const reply = {
      statusCode: 200,
      headers: () => reply,
      header: (k: string, v: unknown) => ((sent[k] = v), reply),
      code: (c: number) => ((reply.statusCode = c), reply),
      type: () => reply,
      send: (body: string) => resolve({ status: reply.statusCode, message: body, challenge: false }),
    };
    a.admit(request as unknown as FastifyRequest, reply as unknown as FastifyReply, (err?: Error) => {
      if (!err) return resolve({ admittedAs: request.forwardedPrincipal });
      const e = err as ServiceError;
      resolve({ status: e.status, message: e.message, challenge: [e.headers?.["www-authenticate"], sent["www-authenticate"]].flat().some((c) => /^Basic /.test(String(c ?? ""))), ...(e.headers?.["retry-after"] ? { headers: e.headers } : {}) });
    });
  });
}

const key = (k: string) => ({ "service-repository-key": k });
const named = (k: string, repository = "default") => ({ "service-repository-key": k, "service-repository-name": repository });
const refused = (status: number, message: string, challenge = false) => ({ status, message, challenge });
const asKey = (k: string) => ({ admittedAs: `key:default:${idOf(k)}` });
const ANONYMOUS = { admittedAs: "anonymous:default:" };

const cases: [string, Mode, string, string, Record<string, string>, Outcome][] = [
  // No key.
  ["no key on an artifact path: 401 with a Basic challenge", "enforcing", "GET", ART, {}, refused(401, REQUIRED, true)],
  ["no key on /api/: a bare 401", "enforcing", "GET", "/api/credentials", {}, refused(401, REQUIRED)],
  ["no key on /metrics: a bare 401", "enforcing", "GET", "/metrics", {}, refused(401, REQUIRED)],
  ["anything but a well-formed key in Authorization counts as no key", "enforcing", "GET", ART, { authorization: "Bearer not-a-key" }, refused(401, NOT_A_KEY, true)],
  ["a Basic password that is not a key counts as no key", "enforcing", "GET", "/api/credentials", { authorization: `Basic ${Buffer.from("u:p").toString("base64")}` }, refused(401, NOT_A_KEY)],
  // Malformed, foreign, unknown, revoked, expired keys.
  ["a malformed Service-Repository-Key on an artifact path", "enforcing", "GET", ART, key(malformed), refused(401, "the key in Service-Repository-Key is malformed", true)],
  ["a malformed Service-Repository-Key on /api/", "enforcing", "GET", "/api/credentials", key("nope"), refused(401, "the key in Service-Repository-Key is malformed")],
  ["a key of another tenant", "enforcing", "GET", "/api/credentials", key(otherTenant), refused(401, "this key belongs to another tenant")],
  ["a key of another tenant on an artifact path", "enforcing", "GET", ART, key(otherTenant), refused(401, "this key belongs to another tenant", true)],
  ["a well-formed key nobody minted", "enforcing", "GET", ART, key(unknown), refused(401, UNKNOWN, true)],
  ["a revoked key", "enforcing", "GET", ART, key(revoked), refused(401, REVOKED, true)],
  ["an expired key", "enforcing", "GET", "/api/credentials", key(expired), refused(401, EXPIRED)],
  // Where the key may be used from.
  ["a key used from outside its allowlist", "enforcing", "GET", ART, key(allowlisted), refused(403, "this key may not be used from 127.0.0.1")],
  // Rights.
  ["a key that holds nothing", "enforcing", "GET", ART, named(nothing), refused(403, 'this key does not hold repository:read on default')],
  ["a read-only key writing", "enforcing", "PUT", ART, named(namedReader), refused(403, "this key does not hold repository:write on default")],
  ["a read-only key reading its repository, named", "enforcing", "GET", ART, named(namedReader), asKey(namedReader)],
  ["HEAD is a read", "enforcing", "HEAD", ART, named(namedReader), asKey(namedReader)],
  ["a repository grant without Service-Repository-Name: the refusal names the header and the repository's option, never a wider grant", "enforcing", "GET", ART, key(namedReader), refused(403, 'this key does not hold repository:read on * (no Service-Repository-Name header was sent, and repository default is not authorised by its path: send "Service-Repository-Name: default", or have an administrator switch on its scopeFromPath)')],
  ["a wildcard grant without Service-Repository-Name", "enforcing", "GET", ART, key(wildReader), asKey(wildReader)],
  ["a lapsed grant holds nothing", "enforcing", "GET", ART, key(lapsedWild), refused(403, "this key does not hold repository:read on * (no Service-Repository-Name header was sent)")],
  ["the key in Bearer", "enforcing", "GET", ART, { authorization: `Bearer ${wildReader}` }, asKey(wildReader)],
  ["the key as Basic's password", "enforcing", "GET", ART, { authorization: `Basic ${Buffer.from(`x:${wildReader}`).toString("base64")}` }, asKey(wildReader)],
  ["Service-Repository-Key wins over Authorization", "enforcing", "GET", ART, { "service-repository-key": nothing, authorization: `Bearer ${admin}` }, refused(403, "this key does not hold repository:read on * (no Service-Repository-Name header was sent)")],
  // Prefix scopes, on a segment boundary.
  ["a prefix scope covers a path under it", "enforcing", "PUT", "/repository/default/libs/com/acme/v2/app.jar", named(prefixDeployer), asKey(prefixDeployer)],
  ["a prefix scope covers an encoded path under it", "enforcing", "GET", "/repository/default/libs/com/%61cme/app.jar", named(prefixDeployer), asKey(prefixDeployer)],
  ["a prefix scope does not cover a sibling sharing its letters", "enforcing", "GET", "/repository/default/libs/com/acmecorp/other.jar", named(prefixDeployer), refused(403, "this key does not hold repository:read on default (it holds that right only under default:libs/com/acme)")],
  ["a prefix scope does not cover a file beside it", "enforcing", "PUT", "/repository/default/libs/com/acme.jar", named(prefixDeployer), refused(403, "this key does not hold repository:write on default (it holds that right only under default:libs/com/acme)")],
  ["a path that climbs out is refused before any right", "enforcing", "GET", "/repository/default/libs/com/acme/%2e%2e/acmecorp/other.jar", named(prefixDeployer), refused(400, "'.' and '..' segments are not allowed in artifact paths")],
  // The repository header.
  ["Service-Repository-Name naming another repository", "enforcing", "GET", ART, named(otherDeployer, "other"), refused(403, 'Service-Repository-Name names repository "other" but this request is for repository "default"')],
  ["Service-Repository-Name that is no repository name", "enforcing", "GET", ART, named(admin, "bad name"), refused(400, "Service-Repository-Name is not a valid repository name")],
  // The API.
  ["/api/ needs manage:read at *: a deploy key", "enforcing", "GET", "/api/credentials", key(starDeployer), refused(403, "this key does not hold manage:read on *")],
  ["/api/ needs manage at *, not on one repository", "enforcing", "GET", "/api/credentials", key(scopedManager), refused(403, "this key does not hold manage:read on *")],
  ["an /api/ write needs manage:write", "enforcing", "POST", "/api/credentials", key(manageReader), refused(403, "this key does not hold manage:write on *")],
  ["an /api/ read with manage:read", "enforcing", "GET", "/api/credentials", key(manageReader), asKey(manageReader)],
  ["capabilities with a read right somewhere", "enforcing", "GET", "/api/capabilities", key(namedReader), asKey(namedReader)],
  ["capabilities with no right", "enforcing", "GET", "/api/capabilities", key(nothing), refused(403, "this key does not hold a read right")],
  ["capabilities with no key", "enforcing", "GET", "/api/capabilities", {}, refused(401, REQUIRED)],
  ["who am I, a key holding nothing", "enforcing", "GET", "/api/me", key(nothing), asKey(nothing)],
  ["who am I, with no key", "enforcing", "GET", "/api/me", {}, refused(401, REQUIRED)],
  ["who am I, a revoked key", "enforcing", "GET", "/api/me", key(revoked), refused(401, REVOKED)],
  ["who am I is read-only: a write needs manage:write", "enforcing", "POST", "/api/me", key(nothing), refused(403, "this key does not hold manage:write on *")],
  ["/metrics needs manage:read at *", "enforcing", "GET", "/metrics", key(starDeployer), refused(403, "this key does not hold manage:read on *")],
  ["an /api/ path that is not valid percent-encoding", "enforcing", "GET", "/api/%zz", key(admin), refused(400, "the path is not valid percent-encoding")],
  ["a path nothing guards", "enforcing", "GET", "/", {}, ANONYMOUS],
  // svc.read-only.
  ["read-only refuses a write even to a key holding every right", "read-only", "PUT", ART, key(admin), refused(403, "this server is read-only (svc.read-only): writes are refused")],
  ["read-only refuses a keyless write with 403, not 401", "read-only", "DELETE", ART, {}, refused(403, "this server is read-only (svc.read-only): writes are refused")],
  ["read-only lets reads through", "read-only", "GET", ART, key(admin), asKey(admin)],
  ["read-only leaves /api/ writes to the rights", "read-only", "POST", "/api/credentials", key(admin), asKey(admin)],
  // npm audit: a POST that reads.
  ["npm audit's POST needs only repository:read", "enforcing", "POST", "/repository/default/-/npm/v1/security/advisories/bulk", named(namedReader, "default"), asKey(namedReader)],
  ["npm audit's POST is served on a read-only server", "read-only", "POST", "/repository/default/-/npm/v1/security/advisories/bulk", key(admin), asKey(admin)],
  ["pnpm's audit (npm 6's endpoint) needs only repository:read", "enforcing", "POST", "/repository/default/-/npm/v1/security/audits/quick", named(namedReader, "default"), asKey(namedReader)],
  ["another POST under -/npm/ is a write", "enforcing", "POST", "/repository/default/-/npm/v1/security/other", named(namedReader, "default"), refused(403, "this key does not hold repository:write on default")],
  // svc.anonymous-rights.
  ["anonymous repository:read lets a keyless caller read", "anonymous-read", "GET", ART, {}, ANONYMOUS],
  ["anonymous repository:read does not let a keyless caller write", "anonymous-read", "PUT", ART, {}, refused(401, REQUIRED, true)],
  ["anonymous rights add to a key's own", "anonymous-read", "GET", ART, key(nothing), asKey(nothing)],
  ["anonymous rights keep /api/ closed", "anonymous-read", "GET", "/api/credentials", {}, refused(401, REQUIRED)],
  ["anonymous rights let a keyless caller see capabilities", "anonymous-read", "GET", "/api/capabilities", {}, ANONYMOUS],
  ["anonymous rights on one repository, named", "anonymous-one-repository", "GET", ART, { "service-repository-name": "default" }, ANONYMOUS],
  ["anonymous rights on one repository, not named", "anonymous-one-repository", "GET", ART, {}, refused(401, REQUIRED, true)],
  // svc.repository-scope-from-path=true: without the header, the repository the path names.
  ["a repository grant without Service-Repository-Name, scoped by the path", "scope-from-path", "GET", ART, key(namedReader), asKey(namedReader)],
  ["a read grant scoped by the path still cannot write", "scope-from-path", "PUT", ART, key(namedReader), refused(403, "this key does not hold repository:write on default (the repository the path names)")],
  ["a grant on another repository does not cover the one the path names", "scope-from-path", "PUT", ART, key(otherDeployer), refused(403, "this key does not hold repository:write on default (the repository the path names)")],
  ["a grant on the repository the path names does not reach another", "scope-from-path", "GET", "/repository/other/x.txt", key(namedReader), refused(403, "this key does not hold repository:read on other (the repository the path names)")],
  ["a header naming another repository is still refused", "scope-from-path", "GET", ART, named(otherDeployer, "other"), refused(403, 'Service-Repository-Name names repository "other" but this request is for repository "default"')],
  ["a keyless caller is still asked for a key", "scope-from-path", "GET", ART, {}, refused(401, REQUIRED, true)],
  // The repository's own scopeFromPath (PATCH /api/repositories/default {"scopeFromPath": true}), the setting off.
  ["a repository grant without the header, on a repository authorised by its path", "default-by-path", "GET", ART, key(namedReader), asKey(namedReader)],
  ["a read grant on a repository authorised by its path still cannot write", "default-by-path", "PUT", ART, key(namedReader), refused(403, "this key does not hold repository:write on default (the repository the path names)")],
  ["a repository authorised by its path lends nothing to another", "default-by-path", "GET", "/repository/other/x.txt", key(otherDeployer), refused(403, 'this key does not hold repository:read on * (no Service-Repository-Name header was sent, and repository other is not authorised by its path: send "Service-Repository-Name: other", or have an administrator switch on its scopeFromPath)')],
  ["the header still wins on a repository authorised by its path", "default-by-path", "GET", ART, named(otherDeployer, "other"), refused(403, 'Service-Repository-Name names repository "other" but this request is for repository "default"')],
  // Build caches: cache:read and cache:write on the cache the path names; repository rights give nothing there.
  ["no key on a build cache: 401 with a Basic challenge", "enforcing", "GET", CACHE, {}, refused(401, REQUIRED, true)],
  ["a build cache read with a read-only key on every scope", "enforcing", "GET", CACHE, key(wildCacheReader), asKey(wildCacheReader)],
  ["HEAD of a build cache entry is a read", "enforcing", "HEAD", CACHE, key(wildCacheReader), asKey(wildCacheReader)],
  ["a build cache write needs cache:write", "enforcing", "PUT", CACHE, key(wildCacheReader), refused(403, "this key does not hold cache:write on build cache ci")],
  ["repository rights give nothing on a build cache", "enforcing", "GET", CACHE, key(wildRepositoryDeployer), refused(403, "this key does not hold cache:read on build cache ci")],
  ["a deploy grant on the cache's name writes to it without any header", "enforcing", "PUT", CACHE, key(ciDeployer), asKey(ciDeployer)],
  ["a deploy grant on a cache's name writes to no other cache", "enforcing", "PUT", "/cache/other/0a1b2c", key(ciDeployer), refused(403, "this key does not hold cache:write on build cache other")],
  ["Bazel's cas/ key is a cache path", "enforcing", "PUT", `/cache/ci/cas/${"ab".repeat(32)}`, key(ciDeployer), asKey(ciDeployer)],
  ["a Service-Repository-Name naming another cache is refused", "enforcing", "GET", CACHE, named(ciDeployer, "other"), refused(403, 'Service-Repository-Name names "other" but this request is for build cache "ci"')],
  ["a build cache key of another shape is refused before any right", "enforcing", "GET", "/cache/ci/ac/notahash", key(admin), refused(400, "not a build cache key: a key is one segment of letters, digits, '.', '_' and '-' (Gradle), or ac/<sha256> or cas/<sha256> (Bazel)")],
  ["read-only refuses a build cache write", "read-only", "PUT", CACHE, key(admin), refused(403, "this server is read-only (svc.read-only): writes are refused")],
  ["anonymous repository:read gives no build cache read", "anonymous-read", "GET", CACHE, {}, refused(401, REQUIRED, true)],
  // The OCI registry at /v2/: the repository the path's first segment names, with no header (container clients send none).
  ["the OCI ping without a key: 401 with a Basic challenge", "enforcing", "GET", "/v2/", {}, refused(401, REQUIRED, true)],
  ["the OCI ping answers any known key, whatever it holds", "enforcing", "GET", "/v2/", key(nothing), asKey(nothing)],
  ["the OCI ping with a revoked key", "enforcing", "GET", "/v2/", key(revoked), refused(401, REVOKED, true)],
  ["the OCI ping is open to a keyless caller when anonymous rights read something", "anonymous-one-repository", "GET", "/v2/", {}, ANONYMOUS],
  ["an OCI pull needs repository:read on the repository the path names", "enforcing", "GET", "/v2/default/team/app/manifests/latest", key(namedReader), asKey(namedReader)],
  ["an OCI push needs repository:write there", "enforcing", "PUT", "/v2/default/team/app/manifests/latest", key(namedReader), refused(403, "this key does not hold repository:write on default (the repository the path names)")],
  ["an OCI upload is a write", "enforcing", "POST", "/v2/default/team/app/blobs/uploads/", key(otherDeployer), refused(403, "this key does not hold repository:write on default (the repository the path names)")],
  ["a prefix grant covers the images under it", "enforcing", "PATCH", "/v2/default/libs/com/acme/blobs/uploads/0b6b4c4e-2f4a-4b7a-9d8e-1f2a3b4c5d6e", key(prefixDeployer), asKey(prefixDeployer)],
  ["a prefix grant does not cover another image", "enforcing", "GET", "/v2/default/libs/other/tags/list", key(prefixDeployer), refused(403, "this key does not hold repository:read on default (the repository the path names) (it holds that right only under default:libs/com/acme)")],
  ["the catalog needs a read right over *", "enforcing", "GET", "/v2/_catalog", key(namedReader), refused(403, "this key does not hold repository:read on * (no Service-Repository-Name header was sent)")],
  ["the catalog with a wildcard read grant", "enforcing", "GET", "/v2/_catalog", key(wildReader), asKey(wildReader)],
  ["an OCI pull without a key: 401 with a Basic challenge", "enforcing", "GET", "/v2/default/app/tags/list", {}, refused(401, REQUIRED, true)],
  ["an encoded /v2 prefix is refused", "enforcing", "GET", "/%762/default/app/tags/list", key(admin), refused(400, "the /v2 prefix must not be percent-encoded")],
  // svc.auth=false.
  ["open mode serves a keyless write", "open", "PUT", ART, {}, ANONYMOUS],
  ["open mode serves /api/ to anyone", "open", "POST", "/api/credentials", {}, ANONYMOUS],
  ["open mode reads no key at all", "open", "GET", ART, key("nope"), ANONYMOUS],
];

describe("admission", () => {
  for (const [name, mode, method, url, headers, want] of cases) {
    it(`${name} (${mode}: ${method} ${url})`, async () => {
      expect(await run(admission(mode), method, url, headers)).toEqual(want);
    });
  }

  it("a key is used from an address its allowlist names", async () => {
    expect(await run(admission("enforcing"), "GET", ART, key(allowlisted), "10.1.2.3")).toEqual(asKey(allowlisted));
  });

  it("a key is refused after a cache hit the same way as after a lookup", async () => {
    const a = admission("enforcing");
    for (let i = 0; i < 2; i++) expect(await run(a, "GET", ART, key(revoked))).toEqual(refused(401, REVOKED, true));
  });

  it("a key lookup that fails answers 500 with a reference, never the cause", async () => {
    const got = await run(admission("enforcing"), "GET", "/api/credentials", key(LOOKUP_FAILS));
    expect(got).toMatchObject({ status: 500 });
    expect((got as { message: string }).message).not.toMatch(/auth service/);
    expect((got as { message: string }).message).toMatch(/"reference":"[A-Z0-9]{12}"/);
  });

  it("records each use of a key with the address it came from", async () => {
    const uses: [string, string][] = [];
    await run(admission("enforcing", { recordUse: (id, address) => uses.push([id, address]) }), "GET", ART, key(wildReader), "192.0.2.7");
    expect(uses).toEqual([[idOf(wildReader), "192.0.2.7"]]);
  });
});

describe("admission under a rate limit", () => {
  /** A limiter answering `verdicts[bucket]` (allow when not named), recording the buckets charged. */
  const limited = (verdicts: Partial<Record<Bucket, Verdict>>, taken: Bucket[] = []) =>
    admission("enforcing", {
      limiter: {
        take: (bucket, then) => {
          taken.push(bucket);
          then(verdicts[bucket] ?? "allow");
        },
      },
    });
  const TOO_MANY = { status: 429, message: "too many requests for this tenant: slow down and retry after a minute", challenge: false, headers: { "retry-after": "60" } };

  it("refuses a request over its bucket with 429 and Retry-After: 60", async () => {
    expect(await run(limited({ tenant: "refuse" }), "GET", ART, key(admin))).toEqual(TOO_MANY);
  });

  // Which bucket each request is charged to: the tenant's only for a key that exists, is active
  // and may be used from where it comes; anything else is the keyless callers' to pay.
  const charged: [string, Record<string, string>, string, Bucket[]][] = [
    ["a key holding the right", key(admin), ART, ["tenant"]],
    ["a key lacking the right (403)", named(nothing), ART, ["tenant"]],
    ["no key", {}, ART, ["keyless"]],
    ["not a key in Authorization", { authorization: "Bearer not-a-key" }, ART, ["keyless"]],
    ["a malformed key", key(malformed), ART, ["keyless"]],
    ["a key of another tenant", key(otherTenant), ART, ["keyless"]],
    ["a well-formed key nobody minted", key(unknown), ART, ["keyless"]],
    ["a revoked key", key(revoked), ART, ["keyless"]],
    ["an expired key", key(expired), "/api/credentials", ["keyless"]],
    ["a key used from outside its allowlist", key(allowlisted), ART, ["keyless"]],
    ["a key whose lookup failed", key(LOOKUP_FAILS), ART, ["keyless"]],
    ["a metric scrape", key(admin), "/metrics", []],
  ];
  for (const [name, headers, url, want] of charged) {
    it(`charges ${name} to ${want.join(", ") || "no bucket"}`, async () => {
      const taken: Bucket[] = [];
      await run(limited({}, taken), "GET", url, headers);
      expect(taken).toEqual(want);
    });
  }

  it("keeps the tenant's allowance for its keys while made-up keys are refused 401, then 429 once the keyless bucket is empty", async () => {
    const a = limited({ keyless: "refuse" });
    for (const k of [unknown, makeKey("default"), otherTenant, malformed, revoked]) expect(await run(a, "GET", ART, key(k))).toEqual(TOO_MANY);
    expect(await run(a, "GET", ART, key(admin))).toEqual(asKey(admin));
    expect(await run(limited({ tenant: "refuse" }), "GET", ART, key(unknown))).toEqual(refused(401, UNKNOWN, true));
  });

  it("lets an administrator's API request the tenant's bucket refused draw on the reserve", async () => {
    const taken: Bucket[] = [];
    expect(await run(limited({ tenant: "refuse" }, taken), "DELETE", "/api/rate-limits/default", key(admin))).toEqual(asKey(admin));
    expect(taken).toEqual(["tenant", "reserve"]);
    expect(await run(limited({ tenant: "refuse", reserve: "refuse" }), "GET", "/api/rate-limits", key(admin))).toEqual(TOO_MANY);
  });

  it("keeps the reserve for administration: artifacts, refused API requests and capabilities do not draw on it", async () => {
    for (const [method, url, k] of [["GET", ART, admin], ["GET", "/api/credentials", starDeployer], ["GET", "/api/capabilities", admin]] as const) {
      const taken: Bucket[] = [];
      expect(await run(limited({ tenant: "refuse" }, taken), method, url, key(k))).toEqual(TOO_MANY);
      expect(taken).toEqual(["tenant"]);
    }
  });

  it("never limits metric scrapes or health probes", async () => {
    expect(await run(limited({ tenant: "refuse" }), "GET", "/metrics", key(admin))).toEqual(asKey(admin));
    expect(await run(limited({ keyless: "refuse" }), "GET", "/health/ready", {})).toEqual({ admittedAs: "" });
  });

  it("serves requests when Redis cannot decide (fail open)", async () => {
    expect(await run(limited({ tenant: "degraded" }), "GET", ART, key(admin))).toEqual(asKey(admin));
  });

  it("decides a cached key without waiting for a promise", () => {
    const a = limited({});
    const sync = () => {
      let outcome: string | undefined;
      const request = { method: "GET", url: ART, headers: key(admin), raw: { headers: key(admin), rawHeaders: [] }, socket: { remoteAddress: "127.0.0.1" }, forwardedPrincipal: "" };
      a.admit(request as unknown as FastifyRequest, {} as FastifyReply, (err) => (outcome = err ? err.message : request.forwardedPrincipal));
      return outcome;
    };
    expect(sync()).toBeUndefined(); // the first use looks the key up
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        expect(sync()).toBe(asKey(admin).admittedAs);
        resolve();
      }),
    );
  });
});

describe("health detail", () => {
  const may = (mode: Mode, headers: Record<string, string>) =>
    admission(mode).mayReadHealthDetail({ headers, socket: { remoteAddress: "127.0.0.1" } } as unknown as FastifyRequest);

  it("is shown to a key holding manage:read at *", async () => {
    expect(await may("enforcing", key(admin))).toBe(true);
    expect(await may("enforcing", key(manageReader))).toBe(true);
  });

  it("is not shown without the right, without a key, or to a key that would be refused", async () => {
    for (const k of [starDeployer, scopedManager, revoked, expired, unknown, otherTenant, malformed, LOOKUP_FAILS]) expect(await may("enforcing", key(k))).toBe(false);
    expect(await may("enforcing", {})).toBe(false);
  });

  it("is shown to anyone in open mode", async () => {
    expect(await may("open", {})).toBe(true);
  });
});

describe("admission of console sessions", () => {
  const persons = new Map<string, KeyRights>();
  const person = (id: string, grants: { scope: string; tokens: string[] }[]) =>
    persons.set(id, { kind: "person", id, tenant: "default", revoked: false, expiresAt: Infinity, allowedFrom: null, grants: compileGrants(grants.map((g) => ({ scope: g.scope, tokens: expanded(g.tokens), expires: null }))) });
  person("oidc/admin", [{ scope: "*", tokens: ["admin"] }]);
  person("oidc/viewer", [{ scope: "*", tokens: ["read-only", "manage:read"] }]);

  const sessionsById = new Map<string, Session>();
  const lookedUp: string[] = [];
  /** A signed-in session of `personId`: its cookie header and its anti-forgery token. */
  function signIn(personId: string, extra: Partial<Session> = {}) {
    const value = randomBytes(32).toString("base64url");
    const id = createHash("sha256").update(value).digest("hex");
    const csrf = randomBytes(16).toString("hex");
    sessionsById.set(id, { id, tenant: "default", personId, expiresAt: NOW + 3_600_000, csrf, ...extra });
    return { cookie: `theme=dark; svc_session=${value}`, csrf };
  }
  const adminSession = signIn("oidc/admin");
  const viewer = signIn("oidc/viewer");
  const nobody = signIn("oidc/nobody");
  const foreignSession = signIn("oidc/admin", { tenant: "othertenant" });
  const lapsed = signIn("oidc/admin", { expiresAt: NOW - 1000 });
  const ended = { cookie: `svc_session=${randomBytes(32).toString("base64url")}` };
  const failing = signIn("oidc/admin");
  const failingId = [...sessionsById.values()].find((x) => x.csrf === failing.csrf)!.id;

  function withSessions(mode: Mode, extra: Partial<AdmissionDeps> = {}, deploy = false) {
    const policy = accessPolicy({ ...POLICIES[mode], uiDeploy: deploy });
    const lookup = async (id: string) => (id.startsWith(PERSON_ENTRY) ? (persons.get(id.slice(PERSON_ENTRY.length)) ?? { ...persons.get("oidc/admin")!, id: id.slice(PERSON_ENTRY.length), grants: [] }) : (keys.get(id) ?? null));
    const sessions = sessionCacheFactory({
      ttlMs: 60_000,
      lookup: async (id) => {
        lookedUp.push(id);
        if (id === failingId) throw new Error("the console did not answer");
        return sessionsById.get(id) ?? null;
      },
    });
    return admissionFactory({ tenant: "default", policy, cache: rightsCacheFactory({ ttlMs: 60_000, lookup }), sessions, trustedProxies: addressMatcher([]), ...extra });
  }
  const asPerson = (id: string) => ({ admittedAs: `person:default:${id}` });
  const write = (s: { cookie: string; csrf: string }, more: Record<string, string> = {}) => ({ cookie: s.cookie, "x-svc-csrf": s.csrf, ...more });
  const HTML = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

  const rows: [string, string, string, Record<string, string>, Outcome, boolean?][] = [
    // A key always wins.
    ["a key wins over the session cookie", "GET", "/api/credentials", { ...key(nothing), cookie: adminSession.cookie }, refused(403, "this key does not hold manage:read on *")],
    ["a key wins over the session cookie, admitted as the key", "GET", ART, { ...key(wildReader), cookie: adminSession.cookie }, asKey(wildReader)],
    // The person's rights decide, as a key's do.
    ["a person holding manage:read reads the API", "GET", "/api/credentials", { cookie: viewer.cookie }, asPerson("oidc/viewer")],
    ["a person lacking manage:write is refused, by their id", "POST", "/api/credentials", write(viewer), refused(403, "person oidc/viewer does not hold manage:write on *")],
    ["a person holding nothing", "GET", "/api/credentials", { cookie: nobody.cookie }, refused(403, "person oidc/nobody does not hold manage:read on *")],
    ["a person reads an artifact with their rights", "GET", ART, { cookie: viewer.cookie }, asPerson("oidc/viewer")],
    ["an administrator changes the API with the token", "POST", "/api/credentials", write(adminSession), asPerson("oidc/admin")],
    ["metrics by session", "GET", "/metrics", { cookie: viewer.cookie }, asPerson("oidc/viewer")],
    // Cross-site request forgery.
    ["an API change by session without the token", "POST", "/api/credentials", { cookie: adminSession.cookie }, refused(403, CSRF_REFUSED)],
    ["an API change by session with another session's token", "DELETE", "/api/rate-limits/default", write({ cookie: adminSession.cookie, csrf: viewer.csrf }), refused(403, CSRF_REFUSED)],
    ["an artifact write by session without the token", "PUT", ART, { cookie: adminSession.cookie }, refused(403, CSRF_REFUSED)],
    ["a read by session needs no token", "HEAD", ART, { cookie: adminSession.cookie }, asPerson("oidc/admin")],
    // Deploy.
    ["an artifact write by session while Deploy is off", "PUT", ART, write(adminSession), refused(403, DEPLOY_OFF)],
    ["an artifact write by session while Deploy is on", "PUT", ART, write(adminSession), asPerson("oidc/admin"), true],
    ["Deploy on does not lend rights", "PUT", ART, write(viewer), refused(403, "person oidc/viewer does not hold repository:write on * (no Service-Repository-Name header was sent)"), true],
    ["Deploy off leaves keys alone", "PUT", ART, key(admin), asKey(admin)],
    // Console routes: the console decides what to show.
    ["the console home, anonymous", "GET", "/ui/", {}, ANONYMOUS],
    ["a console page, a person holding nothing", "GET", "/ui/credentials", { cookie: nobody.cookie }, asPerson("oidc/nobody")],
    ["sign-in, anonymous", "GET", "/login", {}, ANONYMOUS],
    ["the console's icon, anonymous", "GET", "/favicon.ico", {}, ANONYMOUS],
    ["the dev form posted, anonymous, without the header token", "POST", "/login/dev", {}, ANONYMOUS],
    ["sign-out without the header token (the console checks its form)", "POST", "/logout", { cookie: adminSession.cookie }, asPerson("oidc/admin")],
    ["/ for a browser", "GET", "/", HTML, ANONYMOUS],
    ["/ for a browser, signed in", "GET", "/", { ...HTML, cookie: viewer.cookie }, asPerson("oidc/viewer")],
    ["who am I, a person holding nothing", "GET", "/api/me", { cookie: nobody.cookie }, asPerson("oidc/nobody")],
    ["who am I, an ended session", "GET", "/api/me", ended, refused(401, SESSION_ENDED)],
    // A cookie that stands for no session is no session.
    ["an ended session on the API", "GET", "/api/credentials", ended, refused(401, SESSION_ENDED)],
    ["an ended session on an artifact", "GET", ART, ended, refused(401, SESSION_ENDED, true)],
    ["an ended session on a console page", "GET", "/ui/", ended, ANONYMOUS],
    ["a session past its end", "GET", "/api/credentials", { cookie: lapsed.cookie }, refused(401, SESSION_ENDED)],
    ["a session of another tenant", "GET", "/api/credentials", { cookie: foreignSession.cookie }, refused(401, SESSION_ENDED)],
    ["a cookie the console cannot have set", "GET", "/api/credentials", { cookie: "svc_session=forged" }, refused(401, SESSION_ENDED)],
  ];
  for (const [name, method, url, headers, want, deploy] of rows) {
    it(`${name} (${method} ${url})`, async () => {
      expect(await run(withSessions("enforcing", {}, deploy), method, url, headers)).toEqual(want);
    });
  }

  it("does not ask the console about a cookie it cannot have set", async () => {
    const before = lookedUp.length;
    await run(withSessions("enforcing"), "GET", "/ui/", { cookie: "svc_session=short" });
    expect(lookedUp.length).toBe(before);
  });

  it("shows the health detail to a signed-in person holding manage:read on *, and to no other session", async () => {
    const may = (headers: Record<string, string>) => withSessions("enforcing").mayReadHealthDetail({ headers, socket: { remoteAddress: "127.0.0.1" } } as unknown as FastifyRequest);
    expect(await may({ cookie: viewer.cookie })).toBe(true);
    expect(await may({ cookie: adminSession.cookie })).toBe(true);
    for (const c of [nobody.cookie, ended.cookie, lapsed.cookie, foreignSession.cookie, failing.cookie, "svc_session=forged"]) expect(await may({ cookie: c }), c).toBe(false);
    // A key wins: a key without the right is not helped by the cookie.
    expect(await may({ ...key(nothing), cookie: adminSession.cookie })).toBe(false);
  });

  it("reads no session in open mode", async () => {
    expect(await run(withSessions("open"), "POST", "/api/credentials", { cookie: adminSession.cookie })).toEqual(ANONYMOUS);
  });

  it("answers 500 with a reference when the console does not answer", async () => {
    const got = await run(withSessions("enforcing"), "GET", "/api/credentials", { cookie: failing.cookie });
    expect(got).toMatchObject({ status: 500 });
    expect((got as { message: string }).message).not.toMatch(/console/);
  });

  const charged: [string, string, Record<string, string>, Bucket[]][] = [
    ["a person", "/api/credentials", { cookie: viewer.cookie }, ["tenant"]],
    ["a person refused a right", "/api/credentials", { cookie: nobody.cookie }, ["tenant"]],
    ["a person on a console page", "/ui/", { cookie: nobody.cookie }, ["tenant"]],
    ["an anonymous console visitor", "/ui/", {}, ["keyless"]],
    ["an ended session", "/ui/", ended, ["keyless"]],
  ];
  for (const [name, url, headers, want] of charged) {
    it(`charges ${name} to ${want.join(", ")}`, async () => {
      const taken: Bucket[] = [];
      await run(withSessions("enforcing", { limiter: { take: (bucket, then) => (taken.push(bucket), then("allow")) } }), "GET", url, headers);
      expect(taken).toEqual(want);
    });
  }
});
