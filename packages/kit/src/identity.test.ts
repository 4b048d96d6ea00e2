import { describe, expect, it } from "vitest";
import { IDENTITY_HEADER, IDENTITY_SIG_HEADER, IDENTITY_TS_HEADER } from "@svc/contracts";
import { identityHeaders, identitySigner, verifyIdentity } from "./identity.js";

const secret = "s3cret-ünïcode";
const principal = "key:default:" + "ab".repeat(32);

describe("identitySigner", () => {
  it("writes the same headers as identityHeaders, into the given object", () => {
    const sign = identitySigner(secret);
    const now = 1_790_000_123_456;
    const headers: Record<string, unknown> = { accept: "*/*" };
    sign(headers, "GET", "/repository/default/a/b.bin?x=1", principal, now);
    expect(headers).toEqual({ accept: "*/*", ...identityHeaders(secret, "GET", "/repository/default/a/b.bin?x=1", principal, now) });
    expect(headers[IDENTITY_TS_HEADER]).toBe("1790000123");
  });

  it("is accepted by verifyIdentity for that method and path only", () => {
    const sign = identitySigner(secret);
    const now = Date.now();
    const headers: Record<string, string> = {};
    sign(headers, "PUT", "/repository/default/x?", principal, now);
    expect(verifyIdentity(secret, "PUT", "/repository/default/x?", headers, 60, now)).toMatchObject({ ok: true, principal: { kind: "key", tenant: "default" } });
    expect(verifyIdentity(secret, "PUT", "/repository/default/x", headers, 60, now)).toEqual({ ok: false, reason: "signature" });
    expect(verifyIdentity(secret, "GET", "/repository/default/x?", headers, 60, now)).toEqual({ ok: false, reason: "signature" });
    expect(verifyIdentity("other", "PUT", "/repository/default/x?", headers, 60, now)).toEqual({ ok: false, reason: "signature" });
  });

  it("follows the clock across seconds", () => {
    const sign = identitySigner(secret);
    const a: Record<string, string> = {};
    const b: Record<string, string> = {};
    sign(a, "GET", "/p", principal, 5_000);
    sign(b, "GET", "/p", principal, 6_000);
    expect(a[IDENTITY_TS_HEADER]).toBe("5");
    expect(b[IDENTITY_TS_HEADER]).toBe("6");
    expect(a[IDENTITY_SIG_HEADER]).not.toBe(b[IDENTITY_SIG_HEADER]);
    expect(a[IDENTITY_HEADER]).toBe(principal);
  });
});
