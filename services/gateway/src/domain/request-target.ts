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