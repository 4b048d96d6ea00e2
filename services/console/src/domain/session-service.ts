import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { SessionResolution } from "@svc/contracts";
import type { SessionStore, StoredSession } from "../store/session-store.js";
import type { SessionEvents } from "../messaging/session-events.js";

/** A cookie value as the console mints it: 32 random bytes, base64url. Anything else is not looked up. */
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;

/** The session id of a cookie value: only this is stored, logged or published. */
export function sessionIdOf(cookieValue: string): string {
  return createHash("sha256").update(cookieValue).digest("hex");
}

/** Whether two secrets are equal, in time that does not depend on where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A notice is short, and shown only on a page opened soon after the post that left it. */
const NOTICE_MAX_CHARS = 300;
const NOTICE_TTL_MS = 60_000;

export interface Session extends StoredSession {
  /** The earlier of the lifetime's end and the idle timeout's. */
  endsAt: Date;
}

export interface SessionServiceDeps {
  store: Pick<SessionStore, "create" | "touch" | "end" | "setNotice" | "takeNotice">;
  events: Pick<SessionEvents, "ended">;
  tenant: string;
  lifetimeMs: number;
  idleTimeoutMs: number;
}

export function sessionServiceFactory(deps: SessionServiceDeps) {
  const withEnd = (s: StoredSession): Session => ({ ...s, endsAt: new Date(Math.min(s.expiresAt.getTime(), s.lastSeenAt.getTime() + deps.idleTimeoutMs)) });
  const live = async (id: string): Promise<Session | undefined> => {
    const s = await deps.store.touch(id, deps.idleTimeoutMs);
    return s && withEnd(s);
  };

  return {
    /** A new session for a person who just signed in; `cookie` goes to the browser and nowhere else. */
    async start(personId: string): Promise<{ cookie: string; session: Session }> {
      const cookie = randomBytes(32).toString("base64url");
      const id = sessionIdOf(cookie);
      const csrf = randomBytes(24).toString("base64url");
      await deps.store.create({ id, tenant: deps.tenant, personId, csrf, expiresAt: new Date(Date.now() + deps.lifetimeMs) });
      const session = await live(id);
      if (!session) throw new Error("a session just created is not live");
      return { cookie, session };
    },
    /** The live session a cookie value stands for (its use recorded), or undefined. */
    async fromCookie(value: string | undefined): Promise<Session | undefined> {
      if (value === undefined || !COOKIE_VALUE.test(value)) return undefined;
      return live(sessionIdOf(value));
    },
    /** What the gateway asks: the live session with this id, or undefined. */
    async resolve(id: string): Promise<SessionResolution | undefined> {
      if (!/^[0-9a-f]{64}$/.test(id)) return undefined;
      const s = await live(id);
      return s && { id: s.id, tenant: s.tenant, personId: s.personId, expires: s.endsAt.toISOString(), csrf: s.csrf };
    },
    /** A notice the session's next page shows once (post/redirect/get): kept here, never in the browser. */
    async notify(id: string, text: string): Promise<void> {
      await deps.store.setNotice(id, text.slice(0, NOTICE_MAX_CHARS), NOTICE_TTL_MS);
    },
    /** The session's notice, taken (shown once), or undefined. */
    takeNotice: (id: string): Promise<string | undefined> => deps.store.takeNotice(id),
    /** Signs out: ends the session here and tells every gateway. */
    async end(id: string): Promise<void> {
      if (await deps.store.end(id)) await deps.events.ended(id);
    },
    /**
     * Ends the session a cookie value stands for, if it is live (a browser signing in again: its
     * previous session must not outlive the new one). Only a browser holding the value can name it.
     */
    async endCookie(value: string | undefined): Promise<string | undefined> {
      if (value === undefined || !COOKIE_VALUE.test(value)) return undefined;
      const id = sessionIdOf(value);
      if (!(await deps.store.end(id))) return undefined;
      await deps.events.ended(id);
      return id;
    },
  };
}
export type SessionService = ReturnType<typeof sessionServiceFactory>;
