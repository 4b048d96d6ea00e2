import { createHash, randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { CSRF_FIELD, SESSION_COOKIE } from "@svc/contracts";
import { isPersonId, PERSON_ID_RULE } from "@svc/grants";
import { sameSecret, type SessionService } from "../domain/session-service.js";
import type { IdentityProvider, ProviderKind } from "../domain/identity-providers.js";
import { crossSiteReason, publicBase } from "../domain/web-origin.js";
import { checkDevAccount } from "../domain/dev-accounts.js";
import type { SessionStore } from "../store/session-store.js";
import { devSignInScreen, plainProblemScreen, signInScreen } from "../views/screens.js";
import { cookieOptions, seeOther, sendPage } from "./console-http.js";
import { afterSignIn } from "./after-sign-in.js";

/** The cookie that ties a sign-in under way to the browser that started it (its `state`), or the dev form's token. */
export const SIGN_IN_COOKIE = "svc_signin";
/** A sign-in must come back from the provider within this long. */
export const SIGN_IN_MAX_AGE_MS = 10 * 60_000;

export interface LoginDeps {
  sessions: SessionService;
  signIns: Pick<SessionStore, "addSignIn" | "takeSignIn">;
  providers: IdentityProvider[];
  devProfile: boolean;
  secureCookie: boolean;
  publicUrl: string;
  gatewayUrl: string;
}

const stateId = (state: string) => createHash("sha256").update(state).digest("hex");

/** Sign-in (the providers' flows, the dev form) and sign-out. */
export function loginRoutes(app: FastifyInstance, deps: LoginDeps): void {
  const base = (req: FastifyRequest) => publicBase(req.headers, deps);
  const callbackUrl = (req: FastifyRequest, kind: ProviderKind) => `${base(req)}/login/oauth2/code/${kind}`;
  const signInCookie = (reply: FastifyReply, value: string) => reply.setCookie(SIGN_IN_COOKIE, value, cookieOptions(deps.secureCookie, { path: "/login", maxAgeSeconds: SIGN_IN_MAX_AGE_MS / 1000 }));
  const signInPage = (reply: FastifyReply, status: number, problem?: string) =>
    sendPage(reply, status, {
      title: "Sign in",
      main: signInScreen({ providers: deps.providers.map((p) => ({ href: `/login/${p.kind}`, label: p.label })), dev: deps.devProfile, problem }),
    });

  /**
   * A signed-in browser: a fresh session (never one the browser brought), its cookie, home. The
   * session the browser brought, if any, ends here: one browser, one session. A person id the API
   * would refuse (the provider's subject empty, too long, with spaces, control or non-ASCII
   * characters) signs nobody in: every page would fail with it.
   */
  const signedIn = async (req: FastifyRequest, reply: FastifyReply, personId: string) => {
    if (!isPersonId(personId)) {
      req.log.warn({ personIdStart: personId.slice(0, 80), personIdLength: personId.length }, "refused a sign-in whose person id the API does not accept");
      reply.clearCookie(SIGN_IN_COOKIE, cookieOptions(deps.secureCookie, { path: "/login" }));
      return sendPage(reply, 400, {
        title: "Sign-in not accepted",
        main: plainProblemScreen(
          `The identity provider named you with an id this repository cannot use (${PERSON_ID_RULE}). Nothing was signed in: ask an administrator to check the identity provider's subject ids.`,
          { href: "/login", label: "Back to sign-in" },
        ),
      });
    }
    const previous = await deps.sessions.endCookie(req.cookies[SESSION_COOKIE]);
    const { cookie, session } = await deps.sessions.start(personId);
    req.log.info({ personId, sessionId: session.id, ...(previous ? { endedSessionId: previous } : {}) }, "signed in to the console");
    reply.clearCookie(SIGN_IN_COOKIE, cookieOptions(deps.secureCookie, { path: "/login" }));
    reply.setCookie(SESSION_COOKIE, cookie, cookieOptions(deps.secureCookie));
    return seeOther(reply, afterSignIn(req, reply, deps.secureCookie));
  };

  app.get("/login", async (req, reply) => {
    if (await deps.sessions.fromCookie(req.cookies[SESSION_COOKIE])) return seeOther(reply, "/ui/");
    return signInPage(reply, 200);
  });

  for (const provider of deps.providers) {
    app.get(`/login/${provider.kind}`, async (req, reply) => {
      const start = await provider.begin(callbackUrl(req, provider.kind));
      if ("error" in start) return signInPage(reply, 502, start.error);
      await deps.signIns.addSignIn({ id: stateId(start.state), provider: provider.kind, nonce: start.nonce, codeVerifier: start.codeVerifier });
      signInCookie(reply, start.state);
      return reply.header("cache-control", "no-store").redirect(start.url.href, 302);
    });
  }

  app.get("/login/oauth2/code/:provider", async (req, reply) => {
    const kind = (req.params as { provider: string }).provider;
    const provider = deps.providers.find((p) => p.kind === kind);
    if (!provider) return sendPage(reply, 404, { title: "Not found", main: plainProblemScreen("No such sign-in provider is configured.", { href: "/login", label: "Sign in" }) });
    const query = req.query as Record<string, string | undefined>;
    const state = query.state ?? "";
    const mine = req.cookies[SIGN_IN_COOKIE] ?? "";
    // The state must be the one this browser was sent off with (a forged callback carries another).
    const pending = state !== "" && sameSecret(state, mine) ? await deps.signIns.takeSignIn(stateId(state), SIGN_IN_MAX_AGE_MS) : undefined;
    if (!pending || pending.provider !== kind) {
      req.log.warn({ provider: kind }, "refused a sign-in callback whose state this browser did not start");
      return sendPage(reply, 400, {
        title: "Sign-in not accepted",
        main: plainProblemScreen("This sign-in's state does not match the one this browser started (or it took too long). Nothing was signed in.", { href: "/login", label: "Start again" }),
      });
    }
    if (query.error) return signInPage(reply, 401, `The identity provider did not sign you in (${query.error}).`);
    const current = new URL(`${callbackUrl(req, provider.kind)}?${req.url.split("?")[1] ?? ""}`);
    const result = await provider.finish(current, { state, nonce: pending.nonce, codeVerifier: pending.codeVerifier });
    if (!result.ok) {
      req.log.warn({ provider: kind, reason: result.reason }, "a sign-in failed at the identity provider");
      return signInPage(reply, 401, "The identity provider's answer could not be checked, so you are not signed in. Try again.");
    }
    return signedIn(req, reply, result.personId);
  });

  if (deps.devProfile) {
    const devForm = (reply: FastifyReply, status: number, problem?: string) => {
      const token = randomBytes(24).toString("base64url");
      signInCookie(reply, token);
      return sendPage(reply, status, { title: "Sign in (dev profile)", main: devSignInScreen({ csrf: token, problem }) });
    };
    app.get("/login/dev", async (_req, reply) => devForm(reply, 200));
    app.post("/login/dev", async (req, reply) => {
      const form = (req.body ?? {}) as Record<string, string | undefined>;
      const token = req.cookies[SIGN_IN_COOKIE] ?? "";
      const crossSite = crossSiteReason(req.headers, base(req));
      if (crossSite || token === "" || !sameSecret(form[CSRF_FIELD] ?? "", token)) {
        return devForm(reply, 403, `The form could not be checked against forgery${crossSite ? `: ${crossSite}` : ""}. Sign in again from this page.`);
      }
      const personId = checkDevAccount(form.username ?? "", form.password ?? "");
      if (!personId) return devForm(reply, 401, "Unknown account or wrong password.");
      return signedIn(req, reply, personId);
    });
  }

  app.post("/logout", async (req, reply) => {
    const session = await deps.sessions.fromCookie(req.cookies[SESSION_COOKIE]);
    if (session) {
      const form = (req.body ?? {}) as Record<string, string | undefined>;
      const crossSite = crossSiteReason(req.headers, base(req));
      if (crossSite || !sameSecret(form[CSRF_FIELD] ?? "", session.csrf)) {
        return sendPage(reply, 403, { title: "Not signed out", main: plainProblemScreen(`The sign-out form could not be checked against forgery${crossSite ? `: ${crossSite}` : ""}.`, { href: "/ui/", label: "Back" }) });
      }
      await deps.sessions.end(session.id);
      req.log.info({ personId: session.personId, sessionId: session.id }, "signed out of the console");
    }
    reply.clearCookie(SESSION_COOKIE, cookieOptions(deps.secureCookie));
    return seeOther(reply, "/login");
  });
}
