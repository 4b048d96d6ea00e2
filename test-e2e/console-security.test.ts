import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runToExit } from "@svc/devstack/service-runner";
import { startSuite, type Suite } from "./suite.js";
import { startIdentityProvider, type TestIdentityProvider } from "./oidc-provider.js";

/**
 * The console's security properties as a browser or an attacker meets them, through the gateway:
 * the cookie's attributes, forgery refused (console forms and API writes by cookie), a forged,
 * expired or signed-out session refused, a sign-in callback with a wrong state refused.
 */
let suite: Suite;
let idp: TestIdentityProvider;

beforeAll(async () => {
  idp = await startIdentityProvider();
  // The default, Secure cookies (the suite's runner allows plain http unless told otherwise).
  suite = await startSuite({ env: { SVC_PROFILE: "dev", SVC_UI_SECURE_COOKIE: undefined, ...idp.consoleEnv() } });
  idp.configure(suite.gatewayUrl);
});

afterAll(async () => {
  await suite?.stop();
  await idp?.stop();
});

const cookiesOf = (res: Response) => res.headers.getSetCookie();
const cookieNamed = (res: Response, name: string) => cookiesOf(res).find((c) => c.startsWith(`${name}=`));
const valueOf = (setCookie: string | undefined) => setCookie?.split(";")[0]!.split("=").slice(1).join("=") ?? "";
const html = { accept: "text/html" };
const form = (fields: Record<string, string>) => ({ "content-type": "application/x-www-form-urlencoded", body: new URLSearchParams(fields).toString() });

/**
 * Signs in with the dev form as a browser would (form token cookie first); the session cookie's
 * Set-Cookie and value. `jar`: cookies the browser holds already (a session of its own).
 */
async function devSignIn(account = "admin", jar?: string) {
  const page = await suite.call("GET", "/login/dev", { headers: { ...html, ...(jar ? { cookie: jar } : {}) } });
  const token = valueOf(cookieNamed(page, "svc_signin"));
  const f = form({ _csrf: token, username: account, password: account });
  const cookie = [`svc_signin=${token}`, ...(jar ? [jar] : [])].join("; ");
  const res = await fetch(`${suite.gatewayUrl}/login/dev`, { method: "POST", redirect: "manual", headers: { ...html, cookie, "content-type": f["content-type"] }, body: f.body });
  expect(res.status).toBe(303);
  const setCookie = cookieNamed(res, "svc_session");
  return { setCookie, cookie: `svc_session=${valueOf(setCookie)}` };
}

/** Starts an OpenID Connect sign-in as a browser would (not following the redirect to the provider). */
const startSignIn = () => fetch(`${suite.gatewayUrl}/login/oidc`, { headers: html, redirect: "manual" });

/** The session's anti-forgery token, as a page carries it. */
async function csrfOf(cookie: string) {
  const page = await (await fetch(`${suite.gatewayUrl}/ui/posture`, { headers: { ...html, cookie } })).text();
  return /<meta name="csrf-token" content="([^"]+)">/.exec(page)![1]!;
}

const post = (path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
  const f = form(fields);
  return fetch(`${suite.gatewayUrl}${path}`, { method: "POST", redirect: "manual", headers: { ...html, cookie, "content-type": f["content-type"], ...headers }, body: f.body });
};

describe("console security", () => {
  it("the session cookie is HttpOnly, SameSite=Lax and Secure unless SVC_UI_SECURE_COOKIE=false allows plain http", async () => {
    const { setCookie } = await devSignIn();
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; SameSite=Lax/);
    expect(setCookie).toMatch(/; Secure/);
    expect(setCookie).toMatch(/; Path=\//);
    expect(cookieNamed(await startSignIn(), "svc_signin")).toMatch(/; Secure/);

    await suite.stopService("console");
    await suite.startService("console", { SVC_UI_SECURE_COOKIE: "false" });
    try {
      const plain = await devSignIn();
      expect(plain.setCookie).toMatch(/; HttpOnly/);
      expect(plain.setCookie).not.toMatch(/Secure/);
    } finally {
      await suite.stopService("console");
      await suite.startService("console", { SVC_UI_SECURE_COOKIE: undefined });
    }
  });

  it("every console page carries a strict Content-Security-Policy and is never framed", async () => {
    for (const path of ["/login", "/login/dev"]) {
      const res = await suite.call("GET", path, { headers: html });
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("form-action 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it("a console form post without the anti-forgery token, with a wrong one, or from another site changes nothing", async () => {
    const { cookie } = await devSignIn();
    const csrf = await csrfOf(cookie);
    expect((await post("/logout", cookie, {})).status).toBe(403);
    expect((await post("/logout", cookie, { _csrf: "x".repeat(csrf.length) })).status).toBe(403);
    expect((await post("/logout", cookie, { _csrf: csrf }, { origin: "http://evil.example", "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await post("/ui/posture", cookie, { _action: "anything" })).status).toBe(403);
    // Still signed in: none of those ended the session.
    expect((await suite.call("GET", "/api/me", { headers: { cookie } })).status).toBe(200);
    expect((await post("/logout", cookie, { _csrf: csrf })).status).toBe(303);
  });

  it("the dev sign-in form refuses a post without its own token", async () => {
    const res = await post("/login/dev", "", { username: "admin", password: "admin" });
    expect(res.status).toBe(403);
    expect(cookieNamed(res, "svc_session")).toBeUndefined();
  });

  it("an API write by session cookie needs x-svc-csrf", async () => {
    const { cookie } = await devSignIn();
    const body = { label: "by cookie" };
    expect((await suite.call("POST", "/api/credentials", { headers: { cookie }, body })).status).toBe(403);
    expect((await suite.call("POST", "/api/credentials", { headers: { cookie, "x-svc-csrf": "wrong" }, body })).status).toBe(403);
    expect((await suite.call("POST", "/api/credentials", { headers: { cookie, "x-svc-csrf": await csrfOf(cookie) }, body })).status).toBe(201);
  });

  it("a forged session cookie is refused by the gateway and the console", async () => {
    const cookie = `svc_session=${randomBytes(32).toString("base64url")}`;
    expect((await suite.call("GET", "/api/me", { headers: { cookie } })).status).toBe(401);
    const ui = await fetch(`${suite.gatewayUrl}/ui/`, { headers: { ...html, cookie }, redirect: "manual" });
    expect(ui.status).toBe(303);
    expect(ui.headers.get("location")).toBe("/login");
  });

  it("a session past its lifetime, or idle past the idle timeout, is refused", async () => {
    const db = new pg.Client({ connectionString: suite.databaseUrl });
    await db.connect();
    try {
      const expired = await devSignIn();
      await db.query("update console.sessions set expires_at = now() - interval '1 second' where ended_at is null and expires_at > now() - interval '1 second' and created_at = (select max(created_at) from console.sessions)");
      expect((await suite.call("GET", "/api/me", { headers: { cookie: expired.cookie } })).status).toBe(401);
      const idle = await devSignIn();
      await db.query("update console.sessions set last_seen_at = now() - interval '31 minutes' where created_at = (select max(created_at) from console.sessions)");
      expect((await suite.call("GET", "/api/me", { headers: { cookie: idle.cookie } })).status).toBe(401);
      expect((await fetch(`${suite.gatewayUrl}/ui/`, { headers: { ...html, cookie: idle.cookie }, redirect: "manual" })).headers.get("location")).toBe("/login");
    } finally {
      await db.end();
    }
  });

  it("a signed-out session is refused at once, though the gateway had admitted it", async () => {
    const { cookie } = await devSignIn();
    expect((await suite.call("GET", "/api/me", { headers: { cookie } })).status).toBe(200);
    expect((await post("/logout", cookie, { _csrf: await csrfOf(cookie) })).status).toBe(303);
    await expect.poll(async () => (await suite.call("GET", "/api/me", { headers: { cookie } })).status, { timeout: 3_000 }).toBe(401);
  });

  it("signing in again in the same browser ends the session it had", async () => {
    const a = await devSignIn();
    expect((await suite.call("GET", "/api/me", { headers: { cookie: a.cookie } })).status).toBe(200);
    const b = await devSignIn("admin", a.cookie);
    expect(b.cookie).not.toBe(a.cookie);
    await expect.poll(async () => (await suite.call("GET", "/api/me", { headers: { cookie: a.cookie } })).status, { timeout: 5_000 }).toBe(401);
    expect((await fetch(`${suite.gatewayUrl}/ui/`, { headers: { ...html, cookie: a.cookie }, redirect: "manual" })).headers.get("location")).toBe("/login");
    expect((await suite.call("GET", "/api/me", { headers: { cookie: b.cookie } })).status).toBe(200);
  });

  it("a notice is the session's own: a forged svc_notice cookie shows nothing, a real one shows once after its action", async () => {
    const { cookie } = await devSignIn();
    const forged = "FORGED-NOTICE-call-support";
    for (const path of ["/ui/", "/ui/credentials"]) {
      const page = await fetch(`${suite.gatewayUrl}${path}`, { headers: { ...html, cookie: `${cookie}; svc_notice=${forged}` } });
      expect(page.status).toBe(200);
      expect(await page.text()).not.toContain(forged);
    }
    const csrf = await csrfOf(cookie);
    const issued = await suite.call("POST", "/api/credentials", { headers: { cookie, "x-svc-csrf": csrf }, body: { label: "to revoke" } });
    expect(issued.status).toBe(201);
    const { id } = (await issued.json()) as { id: string };
    const revoked = await post("/ui/credentials", cookie, { _csrf: csrf, _action: "revoke", id });
    expect(revoked.status).toBe(303);
    expect(cookieNamed(revoked, "svc_notice")).toBeUndefined();
    const next = await fetch(`${suite.gatewayUrl}${revoked.headers.get("location")}`, { headers: { ...html, cookie: `${cookie}; svc_notice=${forged}` } });
    const text = await next.text();
    expect(text).toContain(`<p class="notice" role="status">Key ${id.slice(0, 12)} revoked</p>`);
    expect(text).not.toContain(forged);
    // Shown once.
    expect(await (await fetch(`${suite.gatewayUrl}/ui/credentials`, { headers: { ...html, cookie } })).text()).not.toContain('class="notice"');
  });

  it("with svc.trusted-proxies blank, a client's X-Forwarded-Host/-Proto change neither the sign-in callback nor the forms' origin check", async () => {
    const forwarded = { "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" };
    const start = await fetch(`${suite.gatewayUrl}/login/oidc`, { headers: { ...html, ...forwarded }, redirect: "manual" });
    expect(start.status).toBe(302);
    expect(new URL(start.headers.get("location")!).searchParams.get("redirect_uri")).toBe(`${suite.gatewayUrl}/login/oauth2/code/oidc`);

    const { cookie } = await devSignIn();
    const csrf = await csrfOf(cookie);
    const evil = { origin: "http://evil.example", "x-forwarded-host": "evil.example", "x-forwarded-proto": "http" };
    const refused = await post("/logout", cookie, { _csrf: csrf }, evil);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("another origin");
    expect((await post("/ui/credentials", cookie, { _csrf: csrf, _action: "revoke", id: "0".repeat(64) }, evil)).status).toBe(403);
    expect((await suite.call("GET", "/api/me", { headers: { cookie } })).status).toBe(200);
    // The origin the browser addressed is the gateway's own.
    expect((await post("/logout", cookie, { _csrf: csrf }, { origin: suite.gatewayUrl })).status).toBe(303);
  });

  it("a proxy in svc.trusted-proxies is believed: its X-Forwarded-Host/-Proto make the sign-in callback", async () => {
    await suite.stopService("gateway");
    await suite.startService("gateway", { SVC_TRUSTED_PROXIES: "127.0.0.1" });
    try {
      const start = await fetch(`${suite.gatewayUrl}/login/oidc`, { headers: { ...html, "x-forwarded-host": "repo.example.com", "x-forwarded-proto": "https" }, redirect: "manual" });
      expect(start.status).toBe(302);
      expect(new URL(start.headers.get("location")!).searchParams.get("redirect_uri")).toBe("https://repo.example.com/login/oauth2/code/oidc");
    } finally {
      await suite.stopService("gateway");
      await suite.startService("gateway", { SVC_TRUSTED_PROXIES: undefined });
    }
  });

  it("a sign-in callback with a state this browser did not start signs nobody in", async () => {
    const start = await startSignIn();
    expect(start.status).toBe(302);
    const state = valueOf(cookieNamed(start, "svc_signin"));
    expect(state).not.toBe("");
    const callback = (q: string, cookie: string) => fetch(`${suite.gatewayUrl}/login/oauth2/code/oidc?${q}`, { headers: { ...html, cookie }, redirect: "manual" });
    const wrong = await callback("code=abc&state=not-the-one", `svc_signin=${state}`);
    expect(wrong.status).toBe(400);
    expect(cookieNamed(wrong, "svc_session")).toBeUndefined();
    // The right state from another browser (without this one's sign-in cookie) is refused too.
    expect((await callback(`code=abc&state=${state}`, "")).status).toBe(400);
  });

  it("a plain-http issuer off the loopback address refuses start-up, saying why", async () => {
    const r = await runToExit("console", {
      SVC_DATABASE_URL: suite.databaseUrl,
      SVC_INTERNAL_SECRET: suite.internalSecret,
      SVC_NATS_URL: "nats://127.0.0.1:1",
      SVC_UI_OIDC_ISSUER_URI: "http://idp.example.com",
      SVC_UI_OIDC_CLIENT_ID: "console",
    });
    expect(r.code).toBe(78);
    expect(r.output).toContain('svc.ui.oidc.issuer-uri is a plain-http issuer on "idp.example.com"');
  });
});
