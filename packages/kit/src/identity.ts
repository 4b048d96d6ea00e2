import { createHash, createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from "node:crypto";
import {
  CLIENT_ADDRESS_HEADER,
  IDENTITY_BODY_HEADER,
  IDENTITY_HEADER,
  IDENTITY_NONCE_HEADER,
  IDENTITY_SIG_HEADER,
  IDENTITY_TS_HEADER,
  KEY_LABEL_HEADER,
  MOUNT_SOURCE_HEADER,
  decodePrincipal,
  type Principal,
} from "@svc/contracts";

/**
 * The gateway's signed identity (docs/internals/internal-traffic.md): HMAC-SHA256, keyed with the
 * internal secret, over the method, the exact path with query, the principal, a timestamp
 * (seconds), a nonce that makes every request's signature unique (upstreams refuse one seen
 * before), how the body is bound, and the headers in SIGNED_HEADERS as sent.
 *
 * The body is bound one of two ways (the `x-svc-identity-body` header, itself signed):
 *  - `sha256=<base64url>`: the digest of the whole body, for bodies known up front (API calls,
 *    capped at 1 MiB);
 *  - `trailer`: a streamed body (an artifact upload). Its SHA-256 is computed as it is forwarded
 *    and sent after it in the `x-svc-identity-body-sig` trailer, an HMAC over the signature and
 *    the digest, so nothing is buffered.
 * No body header: the request has no body, and an upstream refuses one that has.
 * Content-Length is not signed itself: the digest covers the exact bytes, hence their number.
 */

/** Headers that change what an upstream does with a request: a replay may not alter them. */
export const SIGNED_HEADERS = [
  "service-repository-name",
  "content-type",
  "content-encoding",
  "if-match",
  "if-none-match",
  "if-modified-since",
  "if-unmodified-since",
  "if-range",
  "range",
  "x-checksum-sha256",
  "x-checksum-sha1",
  "x-checksum-md5",
  "content-md5",
  MOUNT_SOURCE_HEADER,
  CLIENT_ADDRESS_HEADER,
  KEY_LABEL_HEADER,
] as const;

/** The body binding for a body held whole: `sha256=<base64url>`. */
export function bodyDigest(body: string | Uint8Array): string {
  return `sha256=${createHash("sha256").update(body).digest("base64url")}`;
}

/** The binding for a body whose digest follows it in a trailer. */
export const BODY_IN_TRAILER = "trailer";

type HeaderBag = Record<string, unknown>;

function canonical(method: string, path: string, principal: string, ts: string, nonce: string, body: string, headers: HeaderBag): string {
  let text = `svc-identity-2\n${method}\n${path}\n${principal}\n${ts}\n${nonce}\n${body}`;
  for (let i = 0; i < SIGNED_HEADERS.length; i++) {
    const name = SIGNED_HEADERS[i]!;
    const v = headers[name];
    // Header values hold no line break, so a present header cannot be mistaken for another.
    if (v !== undefined) text += `\n${name}:${Array.isArray(v) ? v.join(", ") : String(v)}`;
  }
  return text;
}

const hmac = (key: KeyObject, text: string) => createHmac("sha256", key).update(text).digest("base64url");

/** The trailer that binds a streamed body: an HMAC over the request's signature and the body's SHA-256 (base64url). */
export function bodyTrailer(key: KeyObject, signature: string, sha256: string): string {
  return hmac(key, `svc-identity-body\n${signature}\n${sha256}`);
}

/**
 * Writes the identity headers into `headers` (the ones that go on the wire, SIGNED_HEADERS
 * already final) and returns the signature. `body`: bodyDigest(...), BODY_IN_TRAILER, or
 * undefined for a request without a body.
 */
export type IdentitySigner = ((headers: HeaderBag, method: string, path: string, principal: string, body?: string, now?: number) => string) & {
  /** The `x-svc-identity-body-sig` trailer for a request signed `trailer`. */
  trailer: (signature: string, sha256: string) => string;
};

/** Keys the secret once (a hot path); a nonce per request: a random process prefix and a counter. */
export function identitySigner(secret: string): IdentitySigner {
  const key: KeyObject = createSecretKey(Buffer.from(secret, "utf8"));
  const prefix = randomBytes(9).toString("base64url");
  let counter = 0;
  let second = NaN;
  let tsText = "";
  const sign = (headers: HeaderBag, method: string, path: string, principal: string, body?: string, now = Date.now()) => {
    const ts = Math.floor(now / 1000);
    if (ts !== second) {
      second = ts;
      tsText = String(ts);
    }
    const nonce = `${prefix}${(counter++).toString(36)}`;
    headers[IDENTITY_HEADER] = principal;
    headers[IDENTITY_TS_HEADER] = tsText;
    headers[IDENTITY_NONCE_HEADER] = nonce;
    if (body !== undefined) headers[IDENTITY_BODY_HEADER] = body;
    // Deleting a property slows every later access to the object: only when there is one.
    else if (headers[IDENTITY_BODY_HEADER] !== undefined) delete headers[IDENTITY_BODY_HEADER];
    const sig = hmac(key, canonical(method, path, principal, tsText, nonce, body ?? "", headers));
    headers[IDENTITY_SIG_HEADER] = sig;
    return sig;
  };
  return Object.assign(sign, { trailer: (signature: string, sha256: string) => bodyTrailer(key, signature, sha256) });
}

/**
 * A fresh object holding `send.headers` and the identity headers for them and `send.body`
 * (tests, one-off calls; a streamed body is the gateway's: upload-forwarder.ts).
 */
export function identityHeaders(
  secret: string,
  method: string,
  path: string,
  principal: string,
  now = Date.now(),
  send: { body?: string | Uint8Array; headers?: Record<string, string> } = {},
): Record<string, string> {
  const headers: Record<string, string> = { ...send.headers };
  identitySigner(secret)(headers, method, path, principal, send.body === undefined ? undefined : bodyDigest(send.body), now);
  return headers;
}

export type VerifyResult =
  | {
      ok: true;
      principal: Principal;
      /** How the body is bound: undefined (no body), `sha256=…` or `trailer`. */
      body: string | undefined;
      signature: string;
      /** The secret that verified (the body trailer is checked with the same). */
      key: KeyObject;
      ts: number;
    }
  | { ok: false; reason: "missing" | "stale" | "signature" | "principal" | "replayed" };

/** The secrets an upstream accepts: the current one first, then the previous one while a rotation rolls out. */
export type InternalSecrets = string | readonly string[];

const keysOf = (secrets: InternalSecrets): KeyObject[] =>
  (typeof secrets === "string" ? [secrets] : secrets).filter((s) => s !== "").map((s) => createSecretKey(Buffer.from(s, "utf8")));

export type IdentityVerifier = (method: string, path: string, headers: Record<string, string | string[] | undefined>, now?: number) => VerifyResult;

/**
 * Checks the signature against each accepted secret, within `maxSkewSeconds` of this clock;
 * with a replay guard, a signature it has seen before is refused (`replayed`).
 */
export function identityVerifier(secrets: InternalSecrets, opts: { maxSkewSeconds?: number; replay?: ReplayGuard } = {}): IdentityVerifier {
  const keys = keysOf(secrets);
  const skew = opts.maxSkewSeconds ?? 60;
  return (method, path, headers, now = Date.now()) => {
    const principal = headers[IDENTITY_HEADER];
    const ts = headers[IDENTITY_TS_HEADER];
    const nonce = headers[IDENTITY_NONCE_HEADER];
    const sig = headers[IDENTITY_SIG_HEADER];
    const body = headers[IDENTITY_BODY_HEADER];
    if (typeof principal !== "string" || typeof ts !== "string" || typeof nonce !== "string" || typeof sig !== "string") return { ok: false, reason: "missing" };
    if (body !== undefined && typeof body !== "string") return { ok: false, reason: "signature" };
    const tsNum = Number(ts);
    if (!/^\d{1,12}$/.test(ts) || Math.abs(now / 1000 - tsNum) > skew) return { ok: false, reason: "stale" };
    const text = canonical(method, path, principal, ts, nonce, body ?? "", headers);
    const got = Buffer.from(sig, "base64url");
    if (got.length !== 32) return { ok: false, reason: "signature" };
    const key = keys.find((k) => timingSafeEqual(createHmac("sha256", k).update(text).digest(), got));
    if (!key) return { ok: false, reason: "signature" };
    const p = decodePrincipal(principal);
    if (!p) return { ok: false, reason: "principal" };
    if (opts.replay && !opts.replay.firstSeen(sig, tsNum, now)) return { ok: false, reason: "replayed" };
    return { ok: true, principal: p, body, signature: sig, key, ts: tsNum };
  };
}

/** verifyIdentity without a replay guard (tests, one-off checks). */
export function verifyIdentity(
  secrets: InternalSecrets,
  method: string,
  path: string,
  headers: Record<string, string | string[] | undefined>,
  maxSkewSeconds = 60,
  now = Date.now(),
): VerifyResult {
  return identityVerifier(secrets, { maxSkewSeconds })(method, path, headers, now);
}

/**
 * The signatures this process has accepted within the skew window, by timestamp second: a
 * signature is only valid for `windowSeconds` either side of its timestamp, so a second's set
 * is dropped once that second is out of the window. Memory: one short string per request
 * accepted in the last `2 × windowSeconds` at most (per process; docs/internals/internal-traffic.md
 * says what that means with several replicas).
 */
export class ReplayGuard {
  private readonly seconds = new Map<number, Set<string>>();
  private pruned = 0;

  constructor(private readonly windowSeconds = 60) {}

  /** True the first time a signature is offered; false after. */
  firstSeen(signature: string, ts: number, now = Date.now()): boolean {
    const nowSec = Math.floor(now / 1000);
    if (nowSec !== this.pruned) {
      this.pruned = nowSec;
      for (const second of this.seconds.keys()) if (second < nowSec - this.windowSeconds - 1) this.seconds.delete(second);
    }
    let seen = this.seconds.get(ts);
    if (!seen) {
      seen = new Set();
      this.seconds.set(ts, seen);
    }
    if (seen.has(signature)) return false;
    seen.add(signature);
    return true;
  }

  /** Signatures held (tests, metrics). */
  size(): number {
    let n = 0;
    for (const s of this.seconds.values()) n += s.size;
    return n;
  }
}
