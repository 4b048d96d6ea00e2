/**
 * Where the browser is, as the console must know it: the callback URLs it registers with the
 * providers, and the origin every form post must come from. The gateway forwards console routes
 * with the upstream's Host, so the browser's own host comes from svc.ui.public-url, else from
 * X-Forwarded-Host/-Proto as the gateway sets them (it replaces whatever the client sent: the
 * Host the client addressed, or what a proxy in svc.trusted-proxies says it was asked for), else
 * from svc.ui.gateway-url (right on loopback, where the browser uses the gateway's own address).
 */
export function publicBase(headers: Record<string, string | string[] | undefined>, settings: { publicUrl: string; gatewayUrl: string }): string {
  if (settings.publicUrl !== "") return settings.publicUrl.replace(/\/+$/, "");
  const host = first(headers["x-forwarded-host"]);
  if (host && /^[A-Za-z0-9.\-:[\]]+$/.test(host)) {
    const proto = first(headers["x-forwarded-proto"]) === "https" ? "https" : "http";
    return `${proto}://${host}`;
  }
  return new URL(settings.gatewayUrl).origin;
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)?.split(",")[0]?.trim();

/**
 * A state-changing browser request must come from the console's own pages: a browser says where a
 * request comes from (Sec-Fetch-Site, Origin) and no other site can make it say otherwise. A
 * client that sends neither (a script) is judged by the anti-forgery token alone.
 */
export function crossSiteReason(headers: Record<string, string | string[] | undefined>, base: string): string | undefined {
  const site = first(headers["sec-fetch-site"]);
  if (site !== undefined && site !== "same-origin") return `the request came from another site (Sec-Fetch-Site: ${site})`;
  const origin = first(headers.origin);
  if (origin !== undefined && origin !== new URL(base).origin) return "the request came from another origin";
  return undefined;
}
