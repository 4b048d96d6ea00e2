import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalid } from "@svc/contracts";

/**
 * The one place every text input is checked on its way in, before any route sees it: a NUL
 * byte reaches Postgres as an error (a 500), and control or bidirectional-override characters
 * in a label, a scope or a name make what an administrator reads differ from what is stored.
 * Path parameters and the query string take no control character at all; a JSON body keeps
 * tab, line feed and carriage return (free text may hold them).
 */

// C0 and C1 controls, DEL, the bidirectional embeddings, overrides and isolates, and lone surrogates.
const BIDI = "\u202a-\u202e\u2066-\u2069";
const LINE_CONTROLS = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI}]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]`);
const TEXT_CONTROLS = new RegExp(`[\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f${BIDI}]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]`);

/** Deeper than any route's body goes; a deeper document is refused rather than walked. */
const MAX_DEPTH = 32;

/** The dotted name of the first string in `value` that holds a refused character, or undefined. */
export function findBadText(value: unknown, bad: RegExp, at = "", depth = 0): string | undefined {
  if (typeof value === "string") return bad.test(value) ? at || "body" : undefined;
  if (value === null || typeof value !== "object") return undefined;
  // Only parsed JSON is walked: a stream or buffer body is an artifact's bytes, not text.
  // (fastify's params and query are objects of a null-prototype class, so no prototype test).
  if (ArrayBuffer.isView(value) || typeof (value as { pipe?: unknown }).pipe === "function") return undefined;
  if (depth > MAX_DEPTH) return at || "body";
  for (const [k, v] of Object.entries(value)) {
    // A wildcard route's `*` parameter is the path the caller sent.
    const name = Array.isArray(value) ? `${at}[${k}]` : at ? `${at}.${k}` : k === "*" ? "path" : k;
    if (bad.test(k)) return name;
    const hit = findBadText(v, bad, name, depth + 1);
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** Whether the query string of a raw request target is valid percent-encoding. */
function queryDecodes(url: string): boolean {
  const q = url.indexOf("?");
  if (q < 0) return true;
  try {
    decodeURIComponent(url.slice(q + 1).replace(/\+/g, " "));
    return true;
  } catch {
    return false;
  }
}

function check(request: FastifyRequest): void {
  const param = findBadText(request.params, LINE_CONTROLS);
  if (param !== undefined) throw invalid(param, `${param} holds a control or bidirectional-override character`);
  // The artifact surface takes what package clients send (an npm publish document holds a README); the API takes text.
  if (!request.url.startsWith("/api/")) return;
  if (!queryDecodes(request.url)) throw invalid("query", "the query string is not valid percent-encoding (UTF-8)");
  const query = findBadText(request.query, LINE_CONTROLS);
  if (query !== undefined) throw invalid(query, `${query} holds a control or bidirectional-override character`);
  const type = request.headers["content-type"];
  const json = typeof type === "string" && /^application\/(?:[\w.+-]+\+)?json\b/i.test(type);
  if (!json) return;
  // JSON `null` is not "no body": a route that takes none says so in its schema (EmptyBody).
  const field = findBadText(request.body, TEXT_CONTROLS);
  if (field !== undefined) throw invalid(field, `${field} holds a control or bidirectional-override character`);
}

/** Refuses, with a 400 naming the field, any request whose params, query or JSON body carry text no route should store. */
export function installInputGuard(app: FastifyInstance): void {
  app.addHook("preValidation", async (request) => check(request));
}
