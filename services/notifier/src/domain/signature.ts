import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>`, sent as `webhook-signature: v1,<base64>`.
 * A secret written `whsec_<base64>` is the base64-decoded bytes; any other text is used as
 * its UTF-8 bytes.
 */
export const SECRET_PREFIX = "whsec_";

export type SecretResult = { ok: true; key: Buffer } | { ok: false; reason: string };

/** The shortest key accepted: shorter ones are too easy to guess offline from one delivery. */
export const MIN_SECRET_BYTES = 16;

export function parseSecret(text: string): SecretResult {
  let key: Buffer;
  if (text.startsWith(SECRET_PREFIX)) {
    const b64 = text.slice(SECRET_PREFIX.length);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 === 1) return { ok: false, reason: `a ${SECRET_PREFIX} secret must be followed by base64` };
    key = Buffer.from(b64, "base64");
  } else {
    key = Buffer.from(text, "utf8");
  }
  if (key.length < MIN_SECRET_BYTES) return { ok: false, reason: `the secret must be at least ${MIN_SECRET_BYTES} bytes` };
  return { ok: true, key };
}

export function sign(key: Buffer, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/** The headers of one signed delivery attempt; unsigned when the endpoint has no secret. */
export function webhookHeaders(key: Buffer | undefined, id: string, timestamp: number, body: string): Record<string, string> {
  const headers: Record<string, string> = { "webhook-id": id, "webhook-timestamp": String(timestamp) };
  if (key) headers["webhook-signature"] = sign(key, id, timestamp, body);
  return headers;
}

/**
 * A receiver's check, as documented in the README: one of the space-separated `v1,` entries
 * must match, and the timestamp must be within `toleranceSeconds` of the receiver's clock.
 */
export function verify(
  key: Buffer,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  now = Date.now(),
  toleranceSeconds = 300,
): boolean {
  const ts = Number(headers.timestamp);
  if (!/^\d+$/.test(headers.timestamp) || Math.abs(now / 1000 - ts) > toleranceSeconds) return false;
  const want = Buffer.from(sign(key, headers.id, ts, body));
  return headers.signature.split(" ").some((candidate) => {
    const got = Buffer.from(candidate);
    return got.length === want.length && timingSafeEqual(got, want);
  });
}
