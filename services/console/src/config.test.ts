import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";

const base = { SVC_DATABASE_URL: "postgres://u@127.0.0.1/db", SVC_INTERNAL_SECRET: "x".repeat(32), SVC_NATS_URL: "nats://127.0.0.1:4222" };

describe("console settings", () => {
  it("refuse a plain-http issuer off loopback, naming the setting", () => {
    expect(() => loadConfig([], { ...base, SVC_UI_OIDC_ISSUER_URI: "http://idp.example.com", SVC_UI_OIDC_CLIENT_ID: "c" })).toThrow(/svc\.ui\.oidc\.issuer-uri is a plain-http issuer on "idp\.example\.com"/);
  });

  it("take a plain-http issuer on loopback, and an https one anywhere", () => {
    expect(loadConfig([], { ...base, SVC_UI_OIDC_ISSUER_URI: "http://127.0.0.1:9000", SVC_UI_OIDC_CLIENT_ID: "c" }).uiOidcIssuerUri).toBe("http://127.0.0.1:9000");
    expect(loadConfig([], { ...base, SVC_UI_OIDC_ISSUER_URI: "http://[::1]:9000", SVC_UI_OIDC_CLIENT_ID: "c" }).uiOidcIssuerUri).toBe("http://[::1]:9000");
    expect(loadConfig([], { ...base, SVC_UI_OIDC_ISSUER_URI: "https://idp.example.com", SVC_UI_OIDC_CLIENT_ID: "c" }).uiOidcClientId).toBe("c");
  });

  it("need a provider's client id and secret together", () => {
    expect(() => loadConfig([], { ...base, SVC_UI_OIDC_ISSUER_URI: "https://idp.example.com" })).toThrow(/svc\.ui\.oidc\.client-id is required/);
    expect(() => loadConfig([], { ...base, SVC_UI_OAUTH_CLIENT_ID: "c" })).toThrow(/svc\.ui\.oauth\.client-secret is required/);
    expect(() => loadConfig([], { ...base, SVC_UI_OAUTH_CLIENT_ID: "c", SVC_UI_OAUTH_CLIENT_SECRET: "s", SVC_UI_OAUTH_TOKEN_URL: "http://10.0.0.5/token" })).toThrow(/svc\.ui\.oauth\.token-url is plain http/);
  });

  it("default to secure cookies, a 12-hour lifetime and a 30-minute idle timeout", () => {
    const c = loadConfig([], base);
    expect(c.uiSecureCookie).toBe(true);
    expect(c.uiSessionLifetimeMs).toBe(12 * 3_600_000);
    expect(c.uiSessionIdleTimeoutMs).toBe(30 * 60_000);
    expect(loadConfig([], { ...base, SVC_UI_SECURE_COOKIE: "false" }).uiSecureCookie).toBe(false);
  });
});
