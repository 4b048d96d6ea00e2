import type { FastifyReply, FastifyRequest } from "fastify";
import { cookieOptions } from "./console-http.js";

/** Where a browser goes once signed in, when it came to sign in from a page that asked for it. */
export const AFTER_SIGN_IN_COOKIE = "svc_after_signin";
/**
 * Only the confirmation page of a command-line sign-in (npm login, svc login: its URL opens the
 * console signed out), so the cookie can send nobody anywhere else.
 */
const RETURNS = /^\/ui\/cli-login\?code=[A-Za-z0-9-]{1,20}$/;

/** Remembers `url` (a page's path and query) for after the sign-in, when it is one to come back to. */
export function rememberAfterSignIn(reply: FastifyReply, secure: boolean, url: string): void {
  if (RETURNS.test(url)) reply.setCookie(AFTER_SIGN_IN_COOKIE, url, cookieOptions(secure, { path: "/login", maxAgeSeconds: 10 * 60 }));
}

/** The page to land on after signing in: the remembered one (forgotten here), else home. */
export function afterSignIn(req: FastifyRequest, reply: FastifyReply, secure: boolean): string {
  const remembered = req.cookies[AFTER_SIGN_IN_COOKIE];
  if (remembered === undefined) return "/ui/";
  reply.clearCookie(AFTER_SIGN_IN_COOKIE, cookieOptions(secure, { path: "/login" }));
  return RETURNS.test(remembered) ? remembered : "/ui/";
}
