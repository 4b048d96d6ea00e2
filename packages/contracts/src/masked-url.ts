/**
 * Webhook endpoints (Slack, Teams, Discord and their like) carry their token in the path or the
 * query, so a URL is a secret: everywhere but the setting itself it is shown as its scheme, host
 * and port, with the path and query replaced by "…" (and any user or password dropped). The
 * full URL is seen only where an operator writes it.
 */
export const MASK = "…";

/** `https://hooks.slack.com/services/T0/B0/XX` → `https://hooks.slack.com/…`; text that is not a URL → "…". */
export function maskUrl(text: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return MASK;
  }
  // `origin` is "null" for schemes without one; the protocol and host say the same.
  const origin = `${u.protocol}//${u.host}`;
  return u.pathname === "/" && u.search === "" ? `${origin}/` : `${origin}/${MASK}`;
}

/** Every http(s) URL in a text masked as maskUrl does: for a line or message that quotes one. */
export function maskUrlsIn(text: string): string {
  return text.replace(/\bhttps?:\/\/[^\s"'<>;,]+/gi, (m) => maskUrl(m));
}
