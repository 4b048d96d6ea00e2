import { describe, expect, it } from "vitest";
import pino from "pino";
import { encodePrincipal } from "@svc/contracts";
import { identityHeaders } from "@svc/kit";
import { buildApp, type ConsoleDeps } from "./app.js";
import { sessionServiceFactory } from "./domain/session-service.js";
import type { ApiResult } from "./pages/page-contract.js";
import type { IdentityProvider } from "./domain/identity-providers.js";
import type { SessionStore, StoredSession } from "./store/session-store.js";

const SECRET = "s".repeat(40);

/** The session store in memory, with Postgres's rules for a live session. */
function memoryStore(idle = { ms: 30 * 60_000 }) {
  const rows = new Map<string, StoredSession & { ended: boolean; notice?: string }>();
  const signIns = new Map<string, { provider: string; nonce: string; codeVerifier: string }>();
  const store: Pick<SessionStore, "create" | "touch" | "end" | "setNotice" | "takeNotice" | "addSignIn" | "takeSignIn"> = {
    async create(s) {
      rows.set(s.id, { ...s, lastSeenAt: new Date(), ended: false });
    },
    async touch(id) {
      const r = rows.get(id);
      if (!r || r.ended || r.expiresAt.getTime() <= Date.now() || Date.now() - r.lastSeenAt.getTime() >= idle.ms) return undefined;
      r.lastSeenAt = new Date();
      return { id: r.id, tenant: r.tenant, personId: r.personId, csrf: r.csrf, expiresAt: r.expiresAt, lastSeenAt: r.lastSeenAt };
    },
    async end(id) {
      const r = rows.get(id);
      if (!r || r.ended) return false;
      r.ended = true;
      return true;
    },
    async setNotice(id, text) {
      const r = rows.get(id);
      if (r && !r.ended) r.notice = text;
    },
    async takeNotice(id) {
      const r = rows.get(id);
      const notice = r?.notice;
      if (r) delete r.notice;
      return notice;
    },
    async addSignIn(s) {
      signIns.set(s.id, s);
    },
    async takeSignIn(id) {
      const s = signIns.get(id);
      signIns.delete(id);
      return s;
    },
  };
  return { store, rows };
}

type Api = (method: string, path: string) => Promise<ApiResult>;

function consoleApp(o: { api?: Api; dev?: boolean; providers?: IdentityProvider[] } = {}) {
  const { store, rows } = memoryStore();
  const ended: string[] = [];
  const sessions = sessionServiceFactory({ store, events: { ended: async (id) => void ended.push(id) }, tenant: "default", lifetimeMs: 3_600_000, idleTimeoutMs: 1_800_000 });
  const lines: string[] = [];
  const log = pino({ level: "info" }, { write: (l: string) => void lines.push(l) });
  const api: Api =
    o.api ??
    (async (_m, path) => {
      if (path === "/api/posture") return { status: 200, body: { count: 1, advisories: [{ name: "svc.profile.dev", severity: "critical", summary: "The dev profile is active", why: "w", setting: "svc.profile", remedy: "unset it" }] }, headers: {} };
      if (path === "/api/me") return { status: 200, body: { kind: "person", id: "dev/admin", tenant: "default", grants: [] }, headers: {} };
      return { status: 404, body: { title: "no" }, headers: {} };
    });
  const deps: ConsoleDeps = {
    log,
    internalSecret: SECRET,
    checks: [],
    sessions,
    signIns: store,
    providers: o.providers ?? [],
    gateway: () => api as never,
    options: { devProfile: o.dev ?? true, secureCookie: true, publicUrl: "", gatewayUrl: "http://127.0.0.1:8080", deployEnabled: () => false },
  };
  const app = buildApp(deps);
  /** A request as the gateway forwards it: signed, as anonymous or a person. */
  const call = (method: "GET" | "POST", url: string, opts: { cookie?: string; form?: Record<string, string>; principal?: string; headers?: Record<string, string> } = {}) => {
    const payload = opts.form ? new URLSearchParams(opts.form).toString() : undefined;
    // Signed as the gateway signs: the body and its content type are bound to the signature.
    const signed = identityHeaders(SECRET, method, url, opts.principal ?? encodePrincipal({ kind: "anonymous", tenant: "default", id: "" }), Date.now(), {
      body: payload,
      headers: opts.form ? { "content-type": "application/x-www-form-urlencoded" } : {},
    });
    return app.inject({
      method,
      url,
      headers: { ...signed, ...(opts.cookie ? { cookie: opts.cookie } : {}), ...opts.headers },
      payload,
    });
  };
  return { app, call, rows, ended, lines };
}

const cookieValue = (setCookie: string | string[] | undefined, name: string) => {
  const all = Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : [];
  const c = all.find((x) => x.startsWith(`${name}=`));
  return c ? { value: c.slice(name.length + 1).split(";")[0]!, attributes: c } : undefined;
};

async function devSignIn(c: ReturnType<typeof consoleApp>, account = "admin") {
  const form = await c.call("GET", "/login/dev");
  const token = cookieValue(form.headers["set-cookie"], "svc_signin")!.value;
  const res = await c.call("POST", "/login/dev", { cookie: `svc_signin=${token}`, form: { _csrf: token, username: account, password: account } });
  const session = cookieValue(res.headers["set-cookie"], "svc_session");
  return { res, session };
}

describe("the console app", () => {
  it("with no provider and no dev profile the sign-in page says sign-in is disabled and names the settings", async () => {
    const c = consoleApp({ dev: false });
    const res = await c.call("GET", "/login");
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Sign-in is disabled");
    for (const s of ["svc.ui.oidc.issuer-uri", "svc.ui.oidc.client-id", "svc.ui.oauth.client-id"]) expect(res.body).toContain(s);
    expect(res.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
  });

  it("serves its icon at /favicon.ico and links it from every page, under its Content-Security-Policy", async () => {
    const c = consoleApp({ dev: false });
    const icon = await c.call("GET", "/favicon.ico");
    expect(icon.statusCode).toBe(200);
    expect(icon.headers["content-type"]).toBe("image/svg+xml");
    expect(icon.body).toMatch(/^<svg /);
    expect(icon.headers["content-security-policy"]).toContain("default-src 'self'");
    expect((await c.call("GET", "/ui/assets/favicon.svg")).statusCode).toBe(200);
    expect((await c.call("GET", "/login")).body).toContain('<link rel="icon" href="/ui/assets/favicon.svg" type="image/svg+xml">');
  });

  it("a dev account signs in: a fresh HttpOnly, SameSite=Lax, Secure session cookie and home", async () => {
    const c = consoleApp();
    const { res, session } = await devSignIn(c);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/ui/");
    expect(session?.attributes).toMatch(/HttpOnly/);
    expect(session?.attributes).toMatch(/SameSite=Lax/);
    expect(session?.attributes).toMatch(/Secure/);
    const home = await c.call("GET", "/ui/", { cookie: `svc_session=${session!.value}` });
    expect(home.body).toContain("You hold no rights yet");
    expect(home.body).toContain("dev/admin");
    expect(home.body).toContain('href="/ui/posture">1 security advisory');
  });

  it("the dev form refuses a post without the form's own token", async () => {
    const c = consoleApp();
    const res = await c.call("POST", "/login/dev", { form: { username: "admin", password: "admin" } });
    expect(res.statusCode).toBe(403);
    expect(cookieValue(res.headers["set-cookie"], "svc_session")).toBeUndefined();
  });

  it("the gateway's internal route resolves a live session for a system caller only", async () => {
    const c = consoleApp();
    const { session } = await devSignIn(c);
    const [id] = [...c.rows.keys()];
    const system = encodePrincipal({ kind: "system", tenant: "default", id: "gateway" });
    const ok = await c.call("GET", `/internal/sessions/${id}`, { principal: system });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ id, personId: "dev/admin", tenant: "default" });
    expect(ok.body).not.toContain(session!.value);
    expect((await c.call("GET", `/internal/sessions/${id}`)).statusCode).toBe(403);
    expect((await c.call("GET", `/internal/sessions/${"0".repeat(64)}`, { principal: system })).statusCode).toBe(404);
  });

  it("sign-out needs the session's token; then the session is ended and announced", async () => {
    const c = consoleApp();
    const { session } = await devSignIn(c);
    const cookie = `svc_session=${session!.value}`;
    expect((await c.call("POST", "/logout", { cookie, form: { _csrf: "wrong" } })).statusCode).toBe(403);
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await c.call("GET", "/ui/posture", { cookie })).body)![1]!;
    const out = await c.call("POST", "/logout", { cookie, form: { _csrf: csrf } });
    expect(out.statusCode).toBe(303);
    expect(c.ended).toHaveLength(1);
    expect((await c.call("GET", "/ui/posture", { cookie })).headers.location).toBe("/login");
  });

  it("a page form post from another site is refused even with the token", async () => {
    const c = consoleApp();
    const { session } = await devSignIn(c);
    const cookie = `svc_session=${session!.value}`;
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await c.call("GET", "/ui/posture", { cookie })).body)![1]!;
    const res = await c.call("POST", "/ui/posture", { cookie, form: { _csrf: csrf, _action: "x" }, headers: { "sec-fetch-site": "cross-site" } });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("another site");
  });

  it("an unexpected failure shows the error page with a twelve-character reference, logged in the spec's words", async () => {
    const c = consoleApp({
      api: async (_m, path) => {
        if (path === "/api/posture") throw new Error("gateway unreachable");
        return { status: 200, body: {}, headers: {} };
      },
    });
    const { session } = await devSignIn(c);
    const res = await c.call("GET", "/ui/posture", { cookie: `svc_session=${session!.value}` });
    expect(res.statusCode).toBe(500);
    const reference = /id="failure-reference">([A-Za-z0-9]{12})</.exec(res.body)?.[1];
    expect(reference).toBeDefined();
    expect(c.lines.join("\n")).toContain(`Unexpected failure ${reference} while GET /ui/posture`);
    expect(res.body).not.toContain("gateway unreachable");
  });

  it("a refused API call becomes the 403 page with the gateway's reason and what the page needs", async () => {
    const c = consoleApp({ api: async () => ({ status: 403, body: { title: "Forbidden", detail: "the key lacks manage:read on *" }, headers: {} }) });
    const { session } = await devSignIn(c, "viewer");
    const res = await c.call("GET", "/ui/posture", { cookie: `svc_session=${session!.value}` });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("the key lacks manage:read on *");
    expect(res.body).toContain("manage:read on *");
    expect(res.body).not.toContain("security advisor");
  });

  it("a callback whose state this browser did not start signs nobody in; the right state does", async () => {
    const finished: string[] = [];
    const provider: IdentityProvider = {
      kind: "oidc",
      label: "Test IdP",
      begin: async (redirectUri) => ({ url: new URL(`https://idp.example/auth?redirect_uri=${encodeURIComponent(redirectUri)}`), state: "s".repeat(43), nonce: "n", codeVerifier: "v" }),
      finish: async (url) => (finished.push(url.href), { ok: true, personId: "oidc/alice" }),
    };
    const c = consoleApp({ providers: [provider], dev: false });
    expect((await c.call("GET", "/login")).body).toContain("Sign in with Test IdP");
    const start = await c.call("GET", "/login/oidc");
    expect(start.statusCode).toBe(302);
    expect(start.headers.location).toContain(encodeURIComponent("http://127.0.0.1:8080/login/oauth2/code/oidc"));
    const state = cookieValue(start.headers["set-cookie"], "svc_signin")!.value;
    const forged = await c.call("GET", "/login/oauth2/code/oidc?code=x&state=forged", { cookie: `svc_signin=${state}` });
    expect(forged.statusCode).toBe(400);
    expect(cookieValue(forged.headers["set-cookie"], "svc_session")).toBeUndefined();
    const noCookie = await c.call("GET", `/login/oauth2/code/oidc?code=x&state=${state}`);
    expect(noCookie.statusCode).toBe(400);
    expect(finished).toEqual([]);
    const ok = await c.call("GET", `/login/oauth2/code/oidc?code=x&state=${state}`, { cookie: `svc_signin=${state}` });
    expect(ok.statusCode).toBe(303);
    expect(finished).toEqual([`http://127.0.0.1:8080/login/oauth2/code/oidc?code=x&state=${state}`]);
    expect(cookieValue(ok.headers["set-cookie"], "svc_session")).toBeDefined();
  });

  it("a provider's id the API refuses signs nobody in: 400, no session", async () => {
    for (const personId of ["oidc/alice ", "oidc/", "oidc/\u202Eecila", "oidc/nul\u0000", `oidc/${"x".repeat(5000)}`, "oauth/"]) {
      const provider: IdentityProvider = {
        kind: "oidc",
        label: "Test IdP",
        begin: async () => ({ url: new URL("https://idp.example/auth"), state: "s".repeat(43), nonce: "n", codeVerifier: "v" }),
        finish: async () => ({ ok: true, personId }),
      };
      const c = consoleApp({ providers: [provider], dev: false });
      const state = cookieValue((await c.call("GET", "/login/oidc")).headers["set-cookie"], "svc_signin")!.value;
      const res = await c.call("GET", `/login/oauth2/code/oidc?code=x&state=${state}`, { cookie: `svc_signin=${state}` });
      expect(res.statusCode, JSON.stringify(personId.slice(0, 20))).toBe(400);
      expect(res.body).toContain("Sign-in not accepted");
      expect(cookieValue(res.headers["set-cookie"], "svc_session")).toBeUndefined();
      expect(c.rows.size).toBe(0);
    }
  });

  it("signing in again with a session cookie ends that session", async () => {
    const c = consoleApp();
    const a = (await devSignIn(c)).session!.value;
    const form = await c.call("GET", "/login/dev");
    const token = cookieValue(form.headers["set-cookie"], "svc_signin")!.value;
    const again = await c.call("POST", "/login/dev", { cookie: `svc_signin=${token}; svc_session=${a}`, form: { _csrf: token, username: "admin", password: "admin" } });
    expect(again.statusCode).toBe(303);
    expect(c.ended).toHaveLength(1);
    expect((await c.call("GET", "/ui/", { cookie: `svc_session=${a}` })).headers.location).toBe("/login");
    const b = cookieValue(again.headers["set-cookie"], "svc_session")!.value;
    expect((await c.call("GET", "/ui/", { cookie: `svc_session=${b}` })).statusCode).toBe(200);
  });

  it("a svc_notice cookie is never shown", async () => {
    const c = consoleApp();
    const { session } = await devSignIn(c);
    const res = await c.call("GET", "/ui/", { cookie: `svc_session=${session!.value}; svc_notice=FORGED-NOTICE` });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain("FORGED-NOTICE");
  });
});
