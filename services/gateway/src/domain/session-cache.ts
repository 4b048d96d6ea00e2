import { createHash, timingSafeEqual } from "node:crypto";
import { LRUCache } from "lru-cache";
import { SESSION_COOKIE, type SessionResolution } from "@svc/contracts";

/** A console session as the admission uses it: whose it is, until when, and its anti-forgery token. */
export interface Session {
  id: string;
  tenant: string;
  personId: string;
  /** Epoch ms the session ends unless used again; NaN (unreadable) counts as ended. */
  expiresAt: number;
  csrf: string;
}

export function compileSession(doc: SessionResolution): Session {
  return { id: doc.id, tenant: doc.tenant, personId: doc.personId, expiresAt: Date.parse(doc.expires), csrf: doc.csrf };
}

export type SessionLookup = (id: string) => Promise<Session | null>;

/** A cookie value the console could have set: 32 random bytes or more, base64url. */
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43,256}$/;

/**
 * The session a request's `svc_session` cookie names, by id (the SHA-256 hex of the value,
 * which is never kept): undefined when there is no such cookie, "" for a value the console
 * cannot have set (refused without a lookup, like a malformed key).
 */
export function readSessionId(cookieHeader: string | string[] | undefined): string | undefined {
  const header = Array.isArray(cookieHeader) ? cookieHeader.join("; ") : cookieHeader;
  if (!header || !header.includes(SESSION_COOKIE)) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    return COOKIE_VALUE.test(value) ? createHash("sha256").update(value).digest("hex") : "";
  }
  return undefined;
}

/** Whether `presented` is the session's anti-forgery token, compared in constant time. */
export function csrfMatches(session: Session, presented: string | string[] | undefined): boolean {
  if (typeof presented !== "string" || presented === "") return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(session.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Per-node cache of what session ids stand for, for at most `ttlMs` and never past the
 * session's own end (0 = off). Unknown and ended sessions are remembered for `negativeTtlMs`
 * (at most `ttlMs`), so a flood of one forged cookie asks the console once per window.
 * Concurrent misses for one id share a lookup. `evict` (a `credential.changed` "ended") makes a
 * sign-out effective at once; a lookup that started before it never refills the cache.
 */
export function sessionCacheFactory(opts: { ttlMs: number; lookup: SessionLookup; negativeTtlMs?: number; max?: number; now?: () => number }) {
  const { ttlMs, lookup } = opts;
  const now = opts.now ?? Date.now;
  const negativeTtl = Math.min(ttlMs, opts.negativeTtlMs ?? 10_000);
  const cache = ttlMs > 0 ? new LRUCache<string, { value: Session | null }>({ max: opts.max ?? 50_000, ttl: ttlMs, ttlAutopurge: false }) : undefined;
  const inflight = new Map<string, Promise<Session | null>>();
  let hits = 0;
  let misses = 0;
  let generation = 0;

  const remember = (id: string, value: Session | null) => {
    if (!cache) return;
    const ttl = value === null ? negativeTtl : Math.min(ttlMs, value.expiresAt - now());
    // A session already past its end (or unreadable) is not kept as a session.
    if (value !== null && !(ttl > 0)) return void cache.set(id, { value: null }, { ttl: negativeTtl });
    cache.set(id, { value }, { ttl });
  };

  return {
    /** The cached answer synchronously when present (a session past its end reads as ended), else undefined. */
    peek(id: string): { value: Session | null } | undefined {
      const hit = cache?.get(id);
      if (!hit) return undefined;
      hits++;
      return hit.value !== null && !(hit.value.expiresAt > now()) ? { value: null } : hit;
    },
    get(id: string): Promise<Session | null> {
      misses++;
      const running = inflight.get(id);
      if (running) return running;
      const gen = generation;
      const p = lookup(id)
        .then((value) => {
          if (gen === generation) remember(id, value);
          return value !== null && value.expiresAt > now() ? value : null;
        })
        .finally(() => inflight.get(id) === p && inflight.delete(id));
      inflight.set(id, p);
      return p;
    },
    evict(id: string): void {
      generation++;
      cache?.delete(id);
      inflight.delete(id);
    },
    clear(): void {
      generation++;
      cache?.clear();
      inflight.clear();
    },
    stats: () => ({ hits, misses, size: cache?.size ?? 0 }),
    ttlMs,
  };
}

export type SessionCache = ReturnType<typeof sessionCacheFactory>;
