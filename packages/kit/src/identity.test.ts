import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { IDENTITY_BODY_HEADER, IDENTITY_HEADER, IDENTITY_NONCE_HEADER, IDENTITY_SIG_HEADER, IDENTITY_TS_HEADER, SHA256_OF_BYTES, type HashedBytes } from "@svc/contracts";
import { sha256Through } from "./identity-body.js";
import { ReplayGuard, bodyDigest, identityHeaders, identitySigner, identityVerifier, verifyIdentity } from "./identity.js";

const secret = "s3cret-ünïcode".padEnd(32, "x");
const principal = "key:default:" + "ab".repeat(32);

describe("identitySigner", () => {
  it("writes the principal, timestamp, nonce and signature into the given object, next to its own headers", () => {
    const sign = identitySigner(secret);
    const now = 1_790_000_123_456;
    const headers: Record<string, unknown> = { accept: "*/*" };
    const sig = sign(headers, "GET", "/repository/default/a/b.bin?x=1", principal, undefined, now);
    expect(headers).toMatchObject({ accept: "*/*", [IDENTITY_HEADER]: principal, [IDENTITY_TS_HEADER]: "1790000123", [IDENTITY_SIG_HEADER]: sig });
    expect(headers[IDENTITY_BODY_HEADER]).toBeUndefined();
  });

  it("is accepted by verifyIdentity for that method and path only", () => {
    const sign = identitySigner(secret);
    const now = Date.now();
    const headers: Record<string, string> = {};
    sign(headers, "PUT", "/repository/default/x?", principal, undefined, now);
    expect(verifyIdentity(secret, "PUT", "/repository/default/x?", headers, 60, now)).toMatchObject({ ok: true, principal: { kind: "key", tenant: "default" } });
    expect(verifyIdentity(secret, "PUT", "/repository/default/x", headers, 60, now)).toEqual({ ok: false, reason: "signature" });
    expect(verifyIdentity(secret, "GET", "/repository/default/x?", headers, 60, now)).toEqual({ ok: false, reason: "signature" });
    expect(verifyIdentity("other".padEnd(32, "o"), "PUT", "/repository/default/x?", headers, 60, now)).toEqual({ ok: false, reason: "signature" });
  });

  it("signs each request differently, even the same request in the same second", () => {
    const sign = identitySigner(secret);
    const a: Record<string, string> = {};
    const b: Record<string, string> = {};
    sign(a, "GET", "/p", principal, undefined, 5_000);
    sign(b, "GET", "/p", principal, undefined, 5_000);
    expect(a[IDENTITY_NONCE_HEADER]).not.toBe(b[IDENTITY_NONCE_HEADER]);
    expect(a[IDENTITY_SIG_HEADER]).not.toBe(b[IDENTITY_SIG_HEADER]);
  });
});

describe("what the signature covers", () => {
  const path = "/api/credentials/abc/grants";
  const json = JSON.stringify({ scope: "default:libs", tokens: ["repository:read"] });
  const signed = () =>
    identityHeaders(secret, "POST", path, principal, Date.now(), { body: json, headers: { "content-type": "application/json", "service-repository-name": "default" } });

  it("binds the body's digest: another body is refused", () => {
    const headers = signed();
    expect(headers[IDENTITY_BODY_HEADER]).toBe(bodyDigest(json));
    expect(verifyIdentity(secret, "POST", path, headers).ok).toBe(true);
    // The binding header is signed: pointing it at another body's digest breaks the signature.
    const other = { ...headers, [IDENTITY_BODY_HEADER]: bodyDigest(JSON.stringify({ scope: "*", tokens: ["*"] })) };
    expect(verifyIdentity(secret, "POST", path, other)).toEqual({ ok: false, reason: "signature" });
    // Dropping it (claiming there is no body) as well.
    const { [IDENTITY_BODY_HEADER]: _dropped, ...none } = headers;
    expect(verifyIdentity(secret, "POST", path, none)).toEqual({ ok: false, reason: "signature" });
  });

  it("binds the headers that change the request's meaning, not the others", () => {
    const headers = signed();
    for (const [name, value] of [
      ["service-repository-name", "other"],
      ["content-type", "text/plain"],
      ["if-match", '"x"'],
      ["x-checksum-sha256", "0".repeat(64)],
      ["range", "bytes=0-1"],
    ]) {
      expect(verifyIdentity(secret, "POST", path, { ...headers, [name!]: value }), name).toEqual({ ok: false, reason: "signature" });
    }
    const { "service-repository-name": _n, ...unnamed } = headers;
    expect(verifyIdentity(secret, "POST", path, unnamed)).toEqual({ ok: false, reason: "signature" });
    expect(verifyIdentity(secret, "POST", path, { ...headers, accept: "text/plain", "user-agent": "x" }).ok).toBe(true);
  });

  it("refuses a stale timestamp and a missing nonce", () => {
    const stale = identityHeaders(secret, "GET", "/p", principal, Date.now() - 61_000);
    expect(verifyIdentity(secret, "GET", "/p", stale)).toEqual({ ok: false, reason: "stale" });
    const { [IDENTITY_NONCE_HEADER]: _n, ...noNonce } = identityHeaders(secret, "GET", "/p", principal);
    expect(verifyIdentity(secret, "GET", "/p", noNonce)).toEqual({ ok: false, reason: "missing" });
  });
});

describe("identityVerifier with a replay guard", () => {
  it("accepts a signature once", () => {
    const verify = identityVerifier(secret, { replay: new ReplayGuard(60) });
    const headers = identityHeaders(secret, "DELETE", "/api/credentials/abc", principal);
    expect(verify("DELETE", "/api/credentials/abc", headers).ok).toBe(true);
    expect(verify("DELETE", "/api/credentials/abc", headers)).toEqual({ ok: false, reason: "replayed" });
    // The same request signed again is a new request.
    expect(verify("DELETE", "/api/credentials/abc", identityHeaders(secret, "DELETE", "/api/credentials/abc", principal)).ok).toBe(true);
  });

  it("does not let a forgery use up a signature", () => {
    const verify = identityVerifier(secret, { replay: new ReplayGuard(60) });
    const headers = identityHeaders(secret, "GET", "/p", principal);
    expect(verify("GET", "/other", headers).ok).toBe(false);
    expect(verify("GET", "/p", headers).ok).toBe(true);
  });

  it("forgets a signature once its timestamp is out of the window, when it would be refused as stale anyway", () => {
    const guard = new ReplayGuard(60);
    const t0 = 1_790_000_000_000;
    expect(guard.firstSeen("a", t0 / 1000, t0)).toBe(true);
    expect(guard.firstSeen("a", t0 / 1000, t0 + 60_000)).toBe(false);
    expect(guard.size()).toBe(1);
    guard.firstSeen("b", (t0 + 200_000) / 1000, t0 + 200_000);
    expect(guard.size()).toBe(1);
  });
});

describe("rotating the internal secret", () => {
  const previous = "p".repeat(32);
  const current = "c".repeat(32);

  it("accepts the previous secret beside the current one, and only while it is configured", () => {
    const byOld = identityHeaders(previous, "GET", "/p", principal);
    const byNew = identityHeaders(current, "GET", "/p", principal);
    const during = identityVerifier([current, previous]);
    expect(during("GET", "/p", byOld).ok).toBe(true);
    expect(during("GET", "/p", byNew).ok).toBe(true);
    const after = identityVerifier([current, ""]);
    expect(after("GET", "/p", byOld)).toEqual({ ok: false, reason: "signature" });
    expect(after("GET", "/p", byNew).ok).toBe(true);
  });
});

describe("sha256Through", () => {
  it("reports the SHA-256 and count of what passed once it has ended, for the blob store to take instead of hashing again", async () => {
    const through = sha256Through(() => undefined);
    const report = (through as HashedBytes)[SHA256_OF_BYTES]!;
    expect(report()).toBeUndefined();
    const parts = [Buffer.from("a signed "), Buffer.from("body")];
    const read = (async () => {
      const out: Buffer[] = [];
      for await (const c of through) out.push(c as Buffer);
      // Known by the time the reader sees the end.
      return { bytes: Buffer.concat(out).toString(), report: report() };
    })();
    for (const p of parts) through.write(p);
    through.end();
    expect(await read).toEqual({ bytes: "a signed body", report: { sha256: createHash("sha256").update("a signed body").digest("hex"), size: 13 } });
  });
});
