import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from "node:crypto";
import { IDENTITY_HEADER, IDENTITY_SIG_HEADER, IDENTITY_TS_HEADER, decodePrincipal, type Principal } from "@svc/contracts";

/**
 * HMAC-SHA256 over method, path, principal and a timestamp (seconds), keyed with the
 * internal secret shared by the gateway and the upstream services. Upstreams accept a
 * signature within `maxSkewSeconds` of their clock.
 */
export function signIdentity(secret: string, method: string, path: string, principal: string, ts: number): string {
  return createHmac("sha256", secret).update(`${method}\n${path}\n${principal}\n${ts}`).digest("base64url");
}

/** Writes the three identity headers into `headers` (the gateway's per-request form). */
export type IdentitySigner = (headers: Record<string, unknown>, method: string, path: string, principal: string, now?: number) => void;

/**
 * The same signature as signIdentity/identityHeaders, for a hot path: the HMAC key is prepared
 * once and the headers are written into the caller's object instead of a new one.
 */
export function identitySigner(secret: string): IdentitySigner {
  const key: KeyObject = createSecretKey(Buffer.from(secret, "utf8"));
  let second = NaN;
  let tsText = "";
  return (headers, method, path, principal, now = Date.now()) => {
    const ts = Math.floor(now / 1000);
    if (ts !== second) {
      second = ts;
      tsText = String(ts);
    }
    headers[IDENTITY_HEADER] = principal;
    headers[IDENTITY_TS_HEADER] = tsText;
    headers[IDENTITY_SIG_HEADER] = createHmac("sha256", key).update(`${method}\n${path}\n${principal}\n${tsText}`).digest("base64url");
  };
}

export function identityHeaders(secret: string, method: string, path: string, principal: string, now = Date.now()): Record<string, string> {
  const ts = Math.floor(now / 1000);
  return {
    [IDENTITY_HEADER]: principal,
    [IDENTITY_TS_HEADER]: String(ts),
    [IDENTITY_SIG_HEADER]: signIdentity(secret, method, path, principal, ts),
  };
}

export type VerifyResult = { ok: true; principal: Principal } | { ok: false; reason: string };

export function verifyIdentity(
  secret: string,
  method: string,
  path: string,
  headers: Record<string, string | string[] | undefined>,
  maxSkewSeconds = 60,
  now = Date.now(),
): VerifyResult {
  const principal = headers[IDENTITY_HEADER];
  const ts = headers[IDENTITY_TS_HEADER];
  const sig = headers[IDENTITY_SIG_HEADER];
  if (typeof principal !== "string" || typeof ts !== "string" || typeof sig !== "string") return { ok: false, reason: "missing" };
  const tsNum = Number(ts);
  if (!Number.isInteger(tsNum) || Math.abs(now / 1000 - tsNum) > maxSkewSeconds) return { ok: false, reason: "stale" };
  const want = Buffer.from(signIdentity(secret, method, path, principal, tsNum));
  const got = Buffer.from(sig);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: "signature" };
  const p = decodePrincipal(principal);
  if (!p) return { ok: false, reason: "principal" };
  return { ok: true, principal: p };
}
