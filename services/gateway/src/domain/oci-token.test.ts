// The OCI token flow's pieces: signing and checking tokens, what a token request is granted, and
// what the admission lets a token do on /v2/ (and nowhere else).
import { describe, expect, it } from "vitest";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceError } from "@svc/contracts";
import { compileGrants, parseTokens } from "@svc/grants";
import { makeKey, parseKey } from "@svc/keys";
import { addressMatcher } from "@svc/kit";
import { TOKEN_REFUSED, TOKEN_SCOPE, accessPolicy, admissionFactory } from "./admission.js";
import { grantedScopes, ociImageName, requestedScopes, tokenSignerFactory, type OciScope, type TokenClaims } from "./oci-token.js";
import { rightsCacheFactory, type KeyRights } from "./rights-cache.js";

const NOW = Date.now();
const signer = tokenSignerFactory("internal-secret-for-tests");
const claims = (scopes: OciScope[], extra: Partial<TokenClaims> = {}): TokenClaims => ({
  tenant: "default",
  kind: "key",
  id: "k",
  scopes,
  iat: Math.floor(NOW / 1000),
  exp: Math.floor(NOW / 1000) + 300,
  ...extra,
});
const pull = (repository: string, name: string): OciScope => ({ repository, name, pull: true, push: false });
const rights = (scope: string, tokens: string[]) =>
  compileGrants([{ scope, tokens: (parseTokens(tokens) as { ok: true; tokens: string[] }).tokens, expires: null }]);

describe("OCI tokens", () => {
  it("a signed token verifies to its claims", () => {
    const c = claims([pull("containers", "team/app")]);
    expect(signer.verify(signer.sign(c), "default", NOW)).toEqual(c);
  });

  it("an expired token, a forged one, one of another deployment or tenant is refused", () => {
    const c = claims([pull("containers", "team/app")]);
    const token = signer.sign(c);
    expect(signer.verify(token, "default", (c.exp + 1) * 1000)).toBeUndefined();
    const [body, sig] = token.split(".");
    const widened = Buffer.from(JSON.stringify({ ...c, scopes: [{ ...c.scopes[0], push: true }] })).toString("base64url");
    expect(signer.verify(`svcot_${widened}.${sig}`, "default", NOW)).toBeUndefined();
    expect(signer.verify(`${body}.${sig}x`, "default", NOW)).toBeUndefined();
    expect(tokenSignerFactory("another-secret").verify(token, "default", NOW)).toBeUndefined();
    expect(signer.verify(token, "other", NOW)).toBeUndefined();
    expect(signer.verify("svcot_garbage", "default", NOW)).toBeUndefined();
  });

  it("reads the scopes asked for, leaving out what is not an image's pull or push or the catalog", () => {
    expect(requestedScopes(["repository:containers/team/app:pull,push repository:containers/base:pull", "registry:catalog:*", "registry:other:*", "repository:norepo:pull", "repository:c/x:mount"])).toEqual([
      { repository: "containers", name: "team/app", pull: true, push: true },
      { repository: "containers", name: "base", pull: true, push: false },
      { repository: "*", name: "", pull: true, push: false },
    ]);
    expect(requestedScopes(undefined)).toEqual([]);
    expect(requestedScopes("repository:c/a:* repository:c/b:delete")).toEqual([
      { repository: "c", name: "a", pull: true, push: true },
      { repository: "c", name: "b", pull: false, push: true },
    ]);
  });

  it("grants what was both asked and held, and leaves out what was refused", () => {
    const asked = requestedScopes("repository:containers/team/app:pull,push repository:secret/app:pull repository:public/app:pull,push");
    const held = rights("containers", ["read-only"]);
    const anonymous = rights("public", ["repository:read"]);
    expect(grantedScopes(asked, anonymous, held, NOW)).toEqual([
      { repository: "containers", name: "team/app", pull: true, push: false },
      { repository: "public", name: "app", pull: true, push: false },
    ]);
    expect(grantedScopes(asked, [], undefined, NOW)).toEqual([]);
    // The catalog: to a reader of every repository, not to one of some.
    const catalog = requestedScopes("registry:catalog:*");
    expect(grantedScopes(catalog, [], rights("*", ["repository:read"]), NOW)).toEqual(catalog);
    expect(grantedScopes(catalog, [], held, NOW)).toEqual([]);
  });

  it("finds the image a /v2/ path names", () => {
    expect(ociImageName("team/app/blobs/uploads/0b6b4c4e-2f4a-4b7a-9d8e-1f2a3b4c5d6e")).toBe("team/app");
    expect(ociImageName("app/manifests/latest")).toBe("app");
    expect(ociImageName("app")).toBeUndefined();
  });
});

describe("admission of OCI tokens", () => {
  const keys = new Map<string, KeyRights>();
  const minted = new Map<string, string>();
  const keyOf = (id: string) => minted.get(id)!;
  const mint = (grants: ReturnType<typeof rights>, extra: Partial<KeyRights> = {}) => {
    const key = makeKey("default");
    const id = (parseKey(key) as { ok: true; key: { id: string } }).key.id;
    minted.set(id, key);
    keys.set(id, { id, tenant: "default", revoked: false, expiresAt: Infinity, allowedFrom: null, grants, ...extra });
    return id;
  };
  const deployer = mint(rights("containers", ["deploy"]));
  const revoked = mint(rights("containers", ["deploy"]), { revoked: true });
  const admission = admissionFactory({
    tenant: "default",
    policy: accessPolicy({ auth: true, readOnly: false, anonymousRights: [] }),
    cache: rightsCacheFactory({ ttlMs: 60_000, lookup: async (id) => keys.get(id) ?? null }),
    trustedProxies: addressMatcher([]),
    tokens: signer,
  });

  type Outcome = { admittedAs: string } | { status: number; message: string; challenge: unknown };
  function run(method: string, url: string, headers: Record<string, string>, all: Record<string, string> = { host: "registry.test:8080", ...headers }): Promise<Outcome> {
    const request = { method, url, headers: all, raw: { headers: all, rawHeaders: ["Host", all.host!] }, socket: { remoteAddress: "127.0.0.1" }, forwardedPrincipal: "" };
    const sent: Record<string, unknown> = {};
    const reply = { header: (k: string, v: unknown) => ((sent[k] = v), reply) };
    return new Promise((resolve) =>
      admission.admit(request as unknown as FastifyRequest, reply as unknown as FastifyReply, (err?: Error) => {
        if (!err) return resolve({ admittedAs: request.forwardedPrincipal });
        const e = err as ServiceError;
        resolve({ status: e.status, message: e.message, challenge: sent["www-authenticate"] ?? e.headers?.["www-authenticate"] });
      }),
    );
  }
  const bearer = (c: TokenClaims) => ({ authorization: `Bearer ${signer.sign(c)}` });
  const pullOnly = claims([pull("containers", "team/app")], { id: deployer });
  const BLOB = "/v2/containers/team/app/blobs/uploads/";

  it("a 401 on /v2/ challenges Bearer (realm, service, scope) first, then Basic", async () => {
    expect(await run("POST", BLOB, {})).toMatchObject({
      status: 401,
      challenge: [
        'Bearer realm="http://registry.test:8080/v2/token",service="registry.test:8080",scope="repository:containers/team/app:pull,push"',
        'Basic realm="artifact repository", charset="UTF-8"',
      ],
    });
    expect(await run("GET", "/v2/", {})).toMatchObject({ status: 401, challenge: ['Bearer realm="http://registry.test:8080/v2/token",service="registry.test:8080"', expect.stringMatching(/^Basic /)] });
    expect(await run("GET", "/v2/_catalog", {})).toMatchObject({ status: 401, challenge: ['Bearer realm="http://registry.test:8080/v2/token",service="registry.test:8080",scope="registry:catalog:*"', expect.stringMatching(/^Basic /)] });
  });

  it("a token admits what its scopes allow, as the key it was issued to", async () => {
    expect(await run("GET", "/v2/containers/team/app/manifests/1.0", bearer(pullOnly))).toEqual({ admittedAs: `key:default:${deployer}` });
    expect(await run("GET", "/v2/", bearer(pullOnly))).toEqual({ admittedAs: `key:default:${deployer}` });
  });

  it("a pull-only token is refused a push, another image and the catalog, though its key could", async () => {
    for (const [method, url] of [["POST", BLOB], ["GET", "/v2/containers/other/manifests/1.0"]] as const) {
      expect(await run(method, url, bearer(pullOnly))).toMatchObject({ status: 401, message: TOKEN_SCOPE });
    }
    const everywhere = mint(rights("*", ["read-only"]));
    expect(await run("GET", "/v2/_catalog", bearer({ ...pullOnly, id: everywhere }))).toMatchObject({ status: 401, message: TOKEN_SCOPE });
  });

  it("a token whose key lacks the right is refused 403 naming it, as Basic would be: a new token would not help", async () => {
    const reader = mint(rights("containers", ["read-only"]));
    const asked = requestedScopes("repository:containers/team/app:pull,push registry:catalog:*");
    const token = claims(grantedScopes(asked, [], keys.get(reader)!.grants, NOW), { id: reader });
    expect(await run("GET", "/v2/containers/team/app/manifests/1.0", bearer(token))).toEqual({ admittedAs: `key:default:${reader}` });
    expect(await run("POST", BLOB, bearer(token))).toMatchObject({ status: 403, message: expect.stringMatching(/^this key does not hold repository:write on containers/) });
    expect(await run("GET", "/v2/_catalog", bearer(token))).toMatchObject({ status: 403, message: expect.stringMatching(/^this key does not hold repository:read on \*/) });
  });

  it("a token with the catalog's scope lists the catalog, and only that", async () => {
    const reader = mint(rights("*", ["repository:read"]));
    const catalog = claims(requestedScopes("registry:catalog:*"), { id: reader });
    expect(await run("GET", "/v2/_catalog?n=10", bearer(catalog))).toEqual({ admittedAs: `key:default:${reader}` });
    expect(await run("GET", "/v2/containers/team/app/manifests/1.0", bearer(catalog))).toMatchObject({ status: 401, message: TOKEN_SCOPE });
  });

  it("an expired or forged token is refused with the challenge", async () => {
    const expired = claims(pullOnly.scopes, { id: deployer, exp: Math.floor(NOW / 1000) - 1 });
    expect(await run("GET", "/v2/containers/team/app/manifests/1.0", bearer(expired))).toMatchObject({ status: 401, message: TOKEN_REFUSED, challenge: [expect.stringMatching(/^Bearer /), expect.anything()] });
    expect(await run("GET", "/v2/containers/team/app/manifests/1.0", { authorization: "Bearer svcot_e30.AAAA" })).toMatchObject({ status: 401, message: TOKEN_REFUSED });
  });

  it("a revoked key's token is refused", async () => {
    expect(await run("GET", "/v2/containers/team/app/manifests/1.0", bearer(claims(pullOnly.scopes, { id: revoked })))).toMatchObject({ status: 401 });
  });

  it("a token is never read outside /v2/", async () => {
    expect(await run("GET", "/repository/containers/team/app/x", bearer(pullOnly))).toMatchObject({ status: 401 });
  });

  it("an anonymous token holds no more than svc.anonymous-rights at use", async () => {
    const anonymous = claims([pull("containers", "team/app")], { kind: "anonymous", id: "" });
    expect(await run("GET", "/v2/containers/team/app/manifests/1.0", bearer(anonymous))).toMatchObject({ status: 401 });
  });

  it("the token endpoint takes no key, and refuses a password that is not one", async () => {
    expect(await run("GET", "/v2/token?scope=repository:containers/team/app:pull", {})).toEqual({ admittedAs: "anonymous:default:" });
    const basic = `Basic ${Buffer.from("u:nope").toString("base64")}`;
    expect(await run("GET", "/v2/token?scope=repository:containers/team/app:pull", { authorization: basic })).toMatchObject({ status: 401 });
  });

  it("names the mount source a caller may read, in the signed header, and only that", async () => {
    const mountHeader = async (url: string, headers: Record<string, string>) => {
      const all: Record<string, string> = { host: "registry.test:8080", ...headers };
      await run("POST", url, {}, all);
      return all["x-svc-mount-readable"];
    };
    const key = { "service-repository-key": keyOf(deployer) };
    const url = (from: string) => `${BLOB}?mount=sha256:${"a".repeat(64)}&from=${from}`;
    expect(await mountHeader(url("containers/base"), key)).toBe("containers/base");
    expect(await mountHeader(url("secret/base"), key)).toBeUndefined();
    expect(await mountHeader(url("secret/base"), { ...key, "x-svc-mount-readable": "secret/base" })).toBeUndefined();
    expect(await mountHeader(BLOB, { ...key, "x-svc-mount-readable": "containers/base" })).toBeUndefined();
    // A token must hold the source's pull as well.
    const push = claims([{ repository: "containers", name: "team/app", pull: true, push: true }], { id: deployer });
    expect(await mountHeader(url("containers/base"), bearer(push))).toBeUndefined();
    expect(await mountHeader(url("containers/base"), bearer({ ...push, scopes: [...push.scopes, pull("containers", "base")] }))).toBe("containers/base");
  });
});
