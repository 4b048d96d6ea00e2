import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>`, sent as `webhook-signature: v1,<base64>`.
 * A secret written `whsec_<base64>` is the base64-decoded bytes; any other text is used as
 * its UTF-8 bytes.
 */
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
