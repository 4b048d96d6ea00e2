import { Type, type Static } from "@sinclair/typebox";

/**
 * Console sessions. The console owns them (its own table); the gateway reads the session
 * cookie, asks the console what it stands for (signed as the system principal `gateway`) and
 * admits the request as that person, with the person's rights from the auth service, through
 * the same cache and the same `credential.changed` eviction as keys. Signing out publishes
 * `credential.changed` with `subject: { kind: "session", id }, change: "ended"`.
 */
export const CONSOLE_INTERNAL = {
  /** Route pattern of a session's resolution; `sessionPath` builds a path to call. */
  session: "/internal/sessions/:id",
  sessionPath: (id: string) => `/internal/sessions/${id}`,
} as const;

/**
 * The session cookie: an opaque random value (at least 32 bytes, base64url). Its session id is
 * the SHA-256 hex of the value; only that id is stored, logged or published.
 */
export const SESSION_COOKIE = "svc_session";

/**
 * A request the gateway admits by the session cookie may change state (any method but GET and
 * HEAD) only with this header equal to the session's token against cross-site request forgery
 * (the console's pages send it from their forms' script and server-side calls; a console form
 * post carries it as the `_csrf` field, which the console checks itself).
 */
export const CSRF_HEADER = "x-svc-csrf";
export const CSRF_FIELD = "_csrf";

/** GET /internal/sessions/:id: 404 when the session is unknown, ended or past its lifetime or idle timeout. */
export const SessionResolution = Type.Object({
  /** SHA-256 hex of the cookie value. */
  id: Type.String(),
  tenant: Type.String(),
  /** `oidc/<sub>`, `oauth/<id>`, or `dev/<name>` under the dev profile. */
  personId: Type.String(),
  /** ISO-8601 instant the session ends unless used again (the earlier of its lifetime's end and its idle timeout). */
  expires: Type.String(),
  /** The session's anti-forgery token. */
  csrf: Type.String(),
});
export type SessionResolution = Static<typeof SessionResolution>;
