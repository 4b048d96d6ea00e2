import type { IncomingHttpHeaders } from "node:http";
import { isIPv6 } from "node:net";
import { invalid } from "@svc/contracts";

/**
 * The path the router routes on, read from a request target the way fastify's router
 * (find-my-way) reads it, so that admission decides on exactly what will be served:
 * find-my-way cuts the target at the first `?` or `#` and percent-decodes the rest with
 * decodeURI (so `/%61pi/credentials` is routed as `/api/credentials`, while `%2F` stays
 * encoded), and it takes the path out of an absolute-form target (`http://x/api/...`).
 *
 * Refused here (400), before anything else looks at the request:
 *  - any target that is not origin-form (absolute-form, authority-form, `*`): a client speaks
 *    to this server by path; a proxy request for another origin is not ours to serve;
 *  - a fragment (`#`): never part of a request target (RFC 9112), and the router and the proxy
 *    disagree on it (the router cuts there, URL resolution drops it);
 *  - a backslash: the proxy resolves the upstream URL as WHATWG URLs do, where `\` is a path
 *    separator, so `a\..\..` would climb out of the path the router and admission saw;
 *  - `.` and `..` segments, plain or percent-encoded, for the same reason;
 *  - percent-encoding that does not decode.
 */
export function routedPath(url: string): string {
  if (url.charCodeAt(0) !== 47) {
    throw invalid("request-target", "the request target must be a path starting with / (origin-form); absolute URLs, host:port and * are not served here");
  }
  if (url.includes("#")) throw invalid("request-target", "a request target carries no fragment (#): leave it out");
  if (url.includes("\\")) throw invalid("path", "a backslash is not allowed in the path: percent-encode it as %5C");
  const q = url.indexOf("?");
  const raw = q < 0 ? url : url.slice(0, q);
  let path: string;
  try {
    path = raw.includes("%") ? decodeURI(raw) : raw;
  } catch {
    throw invalid("path", "the path is not valid percent-encoding");
  }
  if (DOT_SEGMENT.test(path)) throw invalid("path", `'.' and '..' segments are not allowed in ${isUnder(path, "/repository") ? "artifact paths" : "a path"}`);
  return path;
}

const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

/** Whether `path` is `prefix` or under it (`/api`, `/api/...`; not `/apix`). */
export function isUnder(path: string, prefix: string): boolean {
  return path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 47);
}

/** Whether an Accept header names text/html with a weight above 0 (`*\/*` alone is not a browser). */
export function acceptsHtml(accept: string | string[] | undefined): boolean {
  const text = Array.isArray(accept) ? accept.join(",") : accept;
  if (!text || !/text\/html/i.test(text)) return false;
  return text.split(",").some((range) => {
    const [type, ...params] = range.split(";").map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    return type === "text/html" && (q === undefined || Number(q.slice(2)) > 0);
  });
}
/** A DNS-style name (RFC 3986 reg-name as URLs and resolvers take it, `_` included) or an IPv4 address. */
const NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;

/**
 * Whether `value` is one host[:port] as a URL's authority carries it (RFC 9110 7.2, RFC 3986
 * 3.2.2-3.2.3, no userinfo): a name or IPv4 address, or an IPv6 address in brackets, then
 * optionally `:` and a port up to 65535. Nothing else (spaces, `@`, `/`, a second colon, an
 * open bracket) can go into an absolute URL made from it.
 */
export function isHost(value: string): boolean {
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*))(?::(\d{1,5}))?$/.exec(value);
  if (!m) return false;
  if (m[3] !== undefined && Number(m[3]) > 65535) return false;
  if (m[1] !== undefined) return IPV6.test(m[1]) && isIPv6(m[1]);
  return NAME.test(m[2]!) && !m[2]!.includes("..");
}

/**
 * The host[:port] the client addressed: what a trusted proxy in front says in X-Forwarded-Host
 * (its first value), else the Host header; undefined when the client sent none (HTTP/1.0 may
 * not; Node refuses an HTTP/1.1 request without one). Throws the 400 for a Host (or a believed
 * X-Forwarded-Host) that is not one host[:port], or for more than one Host header: whatever
 * the gateway or an upstream makes from it (npm's tarball URLs) must name where the client is.
 */
export function addressedHost(request: { headers: IncomingHttpHeaders; rawHeaders: string[] }, viaProxy: boolean): string | undefined {
  let hosts = 0;
  for (let i = 0; i < request.rawHeaders.length; i += 2) if (request.rawHeaders[i]!.length === 4 && request.rawHeaders[i]!.toLowerCase() === "host") hosts++;
  if (hosts > 1) throw invalid("Host", "the request carries more than one Host header: send one, naming the server as you reached it (host[:port])");
  const host = request.headers.host;
  if (host !== undefined && !isHost(host)) throw invalid("Host", "the Host header is not a valid host[:port]: send the server's name or address (and port) as you reached it");
  const forwarded = viaProxy ? firstValue(request.headers["x-forwarded-host"]) : undefined;
  if (forwarded === undefined) return host;
  if (!isHost(forwarded)) throw invalid("X-Forwarded-Host", "the X-Forwarded-Host header from the proxy in front is not a valid host[:port]");
  return forwarded;
}

export const firstValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)?.split(",")[0]?.trim();
