import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { CSRF_FIELD, SESSION_COOKIE } from "@svc/contracts";
import { sameSecret, type SessionService } from "../domain/session-service.js";
import type { GatewayApi } from "../domain/gateway-api.js";
import { crossSiteReason, publicBase } from "../domain/web-origin.js";
import { expectOk, type ConsolePage, type PageContext, type PageOutcome } from "../pages/page-contract.js";
import { homeScreen, noAccessScreen, notFoundScreen, plainProblemScreen, type MeGrant } from "../views/screens.js";
import { seeOther, sendPage } from "./console-http.js";
import { rememberAfterSignIn } from "./after-sign-in.js";
import { html } from "../pages/html.js";
import { holdsNothing, personRights } from "../domain/person-rights.js";
import { homeOverview } from "../pages/home-page.js";

export interface UiDeps {
  sessions: SessionService;
  gateway: GatewayApi;
  pages: readonly ConsolePage[];
  publicUrl: string;
  gatewayUrl: string;
  /** svc.ui.deploy now: read for each page (it changes at run time). */
  deployEnabled: () => boolean;
  /** Cookies only over TLS (the remembered page after sign-in, after-sign-in.ts). */
  secureCookie?: boolean;
}

const firstValues = (o: unknown): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((o ?? {}) as Record<string, unknown>)) {
    const one = Array.isArray(v) ? v[0] : v;
    if (typeof one === "string") out[k] = one;
  }
  return out;
};

/** The home page, the pages of PAGES under /ui/<slug>, and `/` for a browser. */
export function uiRoutes(app: FastifyInstance, deps: UiDeps): void {
  const base = (req: FastifyRequest) => publicBase(req.headers, deps);

  /** The signed-in person's session and what a page gets, or undefined (the caller sends them to sign in). */
  const open = async (req: FastifyRequest, reply: FastifyReply, slug: string | undefined, subpath: string, form: Record<string, string>) => {
    const cookie = req.cookies[SESSION_COOKIE];
    const session = await deps.sessions.fromCookie(cookie);
    if (!session || cookie === undefined) return undefined;
    const api = deps.gateway({ cookie, csrf: session.csrf, from: req.clientAddress });
    // Who may do what, for the forms a page offers and the navigation; the header's advisory
    // count, left out when the person may not read the posture (or it does not answer).
    const [meAnswer, posture] = await Promise.all([
      api<{ id: string; grants: MeGrant[] }>("GET", "/api/me").catch(() => undefined),
      api<{ count?: number }>("GET", "/api/posture").catch(() => undefined),
    ]);
    const me = meAnswer?.status === 200 && Array.isArray(meAnswer.body?.grants) ? meAnswer.body : undefined;
    const may = me ? personRights(me.grants) : holdsNothing;
    const ctx: PageContext = {
      person: { id: session.personId, tenant: session.tenant },
      api,
      subpath,
      query: firstValues(req.query),
      form,
      csrf: session.csrf,
      may,
      options: { deployEnabled: deps.deployEnabled(), publicBaseUrl: base(req) },
    };
    const advisories = posture?.status === 200 && typeof posture.body?.count === "number" ? posture.body.count : undefined;
    // Every page needs manage:read over *: a person without it gets no navigation to them.
    req.consolePage = { viewer: { personId: session.personId, csrf: session.csrf, advisories, seesPages: may("manage:read") }, current: slug };
    return { session, ctx, me: meAnswer };
  };

  /** The notice a post left for the session's next page (post/redirect/get): kept in the session, shown once. */
  const noticeFor = (session: { id: string }) => deps.sessions.takeNotice(session.id);

  const render = async (req: FastifyRequest, reply: FastifyReply, outcome: PageOutcome, opened: { session: { id: string } }) => {
    const state = req.consolePage ?? {};
    if (outcome.kind === "redirect") {
      if (!outcome.location.startsWith("/ui/")) throw new Error(`a page redirected outside the console: ${outcome.location}`);
      if (outcome.notice) await deps.sessions.notify(opened.session.id, outcome.notice);
      return seeOther(reply, outcome.location);
    }
    if (outcome.kind === "json") {
      const site = req.headers["sec-fetch-site"];
      if (req.method !== "GET" || (site !== undefined && site !== "same-origin")) return reply.code(403).send({ title: "same-origin GET only" });
      return reply.header("cache-control", "no-store").send(outcome.body);
    }
    const stored = await noticeFor(opened.session);
    return sendPage(reply, 200, { title: outcome.title, main: outcome.main, viewer: state.viewer, current: state.current, notice: outcome.notice ?? stored, scripts: outcome.scripts });
  };

  app.get("/", async (req, reply) => seeOther(reply, (await deps.sessions.fromCookie(req.cookies[SESSION_COOKIE])) ? "/ui/" : "/login"));
  app.get("/ui", async (_req, reply) => seeOther(reply, "/ui/"));

  app.get("/ui/", async (req, reply) => {
    const opened = await open(req, reply, undefined, "", {});
    if (!opened) return seeOther(reply, "/login");
    const me = expectOk(opened.me ?? (await opened.ctx.api<{ id: string; grants: MeGrant[] }>("GET", "/api/me")));
    const viewer = req.consolePage?.viewer;
    const notice = await noticeFor(opened.session);
    if (me.grants.length === 0) return sendPage(reply, 200, { title: "No access yet", main: noAccessScreen(opened.session.personId), viewer, notice });
    // A person who may read the deployment sees it at a glance above their rights.
    const overview = opened.ctx.may("manage:read") ? await homeOverview(opened.ctx, viewer?.advisories) : "";
    return sendPage(reply, 200, { title: "Home", main: html`${overview}${homeScreen(me)}`, viewer, notice });
  });

  const pageFor = (slug: string) => deps.pages.find((p) => p.slug === slug);
  const subpathOf = (req: FastifyRequest) => {
    const rest = (req.params as { "*"?: string })["*"];
    return rest === undefined ? "" : `/${rest}`;
  };
  const notFound = (req: FastifyRequest, reply: FastifyReply) =>
    sendPage(reply, 404, { title: "Not found", main: notFoundScreen("There is no such console page."), viewer: req.consolePage?.viewer });

  const show = async (req: FastifyRequest, reply: FastifyReply) => {
    const { slug } = req.params as { slug: string };
    const opened = await open(req, reply, slug, subpathOf(req), {});
    if (!opened) {
      rememberAfterSignIn(reply, deps.secureCookie ?? false, req.url);
      return seeOther(reply, "/login");
    }
    const page = pageFor(slug);
    if (!page) return notFound(req, reply);
    req.consolePage = { ...req.consolePage, needs: page.needs };
    return render(req, reply, await page.get(opened.ctx), opened);
  };
  app.get("/ui/:slug", show);
  app.get("/ui/:slug/*", show);

  const act = async (req: FastifyRequest, reply: FastifyReply) => {
    const { slug } = req.params as { slug: string };
    const form = firstValues(req.body);
    const opened = await open(req, reply, slug, subpathOf(req), form);
    if (!opened) return seeOther(reply, "/login");
    const crossSite = crossSiteReason(req.headers, base(req));
    if (crossSite || !sameSecret(form[CSRF_FIELD] ?? "", opened.session.csrf)) {
      req.log.warn({ personId: opened.session.personId, url: req.url, crossSite }, "refused a console form that failed the anti-forgery check");
      return sendPage(reply, 403, {
        title: "Not accepted",
        main: plainProblemScreen(`This form could not be checked against forgery${crossSite ? `: ${crossSite}` : ""}, so nothing was changed. Reload the page and try again.`),
        viewer: req.consolePage?.viewer,
      });
    }
    const page = pageFor(slug);
    const action = page?.actions?.[form._action ?? ""];
    if (!page || !action) return notFound(req, reply);
    req.consolePage = { ...req.consolePage, needs: page.needs };
    return render(req, reply, await action(opened.ctx), opened);
  };
  app.post("/ui/:slug", act);
  app.post("/ui/:slug/*", act);
}

