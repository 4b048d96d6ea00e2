import type { FastifyReply, FastifyRequest } from "fastify";
import type { CookieSerializeOptions } from "@fastify/cookie";
import { ServiceError } from "@svc/contracts";
import { newReference } from "@svc/kit";
import { ApiRefusal } from "../pages/page-contract.js";
import { layout, type LayoutInput, type Viewer } from "../views/layout.js";
import { failureScreen, forbiddenScreen, notFoundScreen, plainProblemScreen } from "../views/screens.js";

/**
 * What every console page answer carries: a strict Content-Security-Policy (the console's own
 * files only: no inline script, no other site's fonts or scripts, never framed, forms only to
 * itself) and headers that keep pages out of caches and other sites' windows.
 */
export const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

/** What the error handler needs to render a refusal inside the layout. */
export interface PageState {
  viewer?: Viewer;
  /** The right the page needs (named on its 403 page). */
  needs?: string;
  current?: string;
}

declare module "fastify" {
  interface FastifyRequest {
    consolePage: PageState | null;
  }
}

export function cookieOptions(secure: boolean, o: { path?: string; maxAgeSeconds?: number } = {}): CookieSerializeOptions {
  return { httpOnly: true, sameSite: "lax", secure, path: o.path ?? "/", ...(o.maxAgeSeconds !== undefined ? { maxAge: o.maxAgeSeconds } : {}) };
}

export function sendPage(reply: FastifyReply, status: number, input: LayoutInput): FastifyReply {
  return reply.code(status).header("cache-control", "no-store").type("text/html; charset=utf-8").send(layout(input).text);
}

/** A redirect after a post or to sign-in: 303, so the browser follows with a GET. */
export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.code(303).header("cache-control", "no-store").redirect(location, 303);
}

/** Logs an unexpected failure under `reference` in the spec's words, for the error page. */
export function logFailure(request: FastifyRequest, err: unknown, reference: string): void {
  request.log.error({ err, reference }, `Unexpected failure ${reference} while ${request.method} ${request.url}`);
}

/**
 * Refusals and failures on console routes, as pages: an API refusal the page met (401 -> sign in
 * again; 403 -> the gateway's reason and what the page needs; 404), and any failure -> the error
 * page with its twelve-character reference (the API's own when it gave one), logged here too.
 */
export function consoleErrorHandler(err: Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const state = request.consolePage ?? {};
  const base = { viewer: state.viewer, current: state.current };
  if (err instanceof ApiRefusal && err.status < 500) {
    if (err.status === 401) return seeOther(reply, "/login");
    if (err.status === 403) return sendPage(reply, 403, { ...base, title: "Not allowed", main: forbiddenScreen(err.detail, state.needs) });
    if (err.status === 404) return sendPage(reply, 404, { ...base, title: "Not found", main: notFoundScreen(err.detail) });
    return sendPage(reply, err.status, { ...base, title: "Refused", main: plainProblemScreen(err.detail, { href: request.url, label: "Back" }) });
  }
  if (err instanceof ServiceError && err.code !== "unexpected") {
    const status = err.code === "unauthenticated" ? 401 : err.code === "forbidden" ? 403 : err.code === "not_found" ? 404 : 400;
    return sendPage(reply, status, { ...base, title: "Refused", main: plainProblemScreen(err.message) });
  }
  const fe = err as Error & { statusCode?: number; validation?: unknown };
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    return sendPage(reply, fe.statusCode, { ...base, title: "Refused", main: plainProblemScreen(fe.message) });
  }
  const reference = (err instanceof ApiRefusal && err.reference) || newReference();
  logFailure(request, err, reference);
  return sendPage(reply, 500, { ...base, title: "Something went wrong", main: failureScreen(reference) });
}
