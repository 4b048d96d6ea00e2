import type { FastifyReply, FastifyRequest } from "fastify";
import { attachment, mustBeSaved } from "@svc/kit";

// Which answers must be saved, and how they are named, is shared with the artifacts service (its
// redirects to the object store carry the same choice: @svc/kit inert.ts).
export { attachment, mustBeSaved };

/**
 * Uploaded content is served inert. Anyone who may write under a path can put an HTML page, an
 * SVG or a script there; served from the console's own origin as it came, it would run as the
 * console for whoever opens it (it could read the console's CSRF token and mint a key). So every
 * answer of a route that serves artifacts (route-table.ts, `inert`), whatever its status, says:
 *  - `Content-Security-Policy: sandbox; default-src 'none'`: a document rendered anyway runs no
 *    script, loads nothing and has an origin of its own (none of the console's cookies or pages);
 *  - `X-Content-Type-Options: nosniff`: the browser believes the type it is told;
 *  - `Content-Disposition: attachment` for anything a browser would render or run (decided by the
 *    type served and by the file's extension; no type at all counts as one it might sniff), so
 *    it is saved, not opened. Not forced when the artifacts are served from an origin of their
 *    own (svc.artifacts.separate-origin): nothing there is worth stealing.
 * Headers of these names from the upstream are replaced, never passed on beside ours.
 */
export const INERT_CSP = "sandbox; default-src 'none'";

const OURS = new Set(["content-security-policy", "x-content-type-options", "content-disposition"]);

/** The file name a URL's path ends in, decoded (as the store names it); "" for a folder. */
export function fileNameOf(url: string): string {
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  const segment = path.slice(path.lastIndexOf("/") + 1);
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export interface InertContent {
  /** An answer's headers (name and value in turn, as the download pool reads them), with ours in place of the upstream's. */
  headers(url: string, upstream: string[]): string[];
  /** The same for an answer fastify sends (the undici path, the gateway's own refusals): an onSend hook. */
  onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void;
}

export function inertContentFactory(options: { separateOrigin: boolean }): InertContent {
  const forceSaving = !options.separateOrigin;
  return {
    headers(url, upstream) {
      const out: string[] = [];
      let type: string | undefined;
      for (let i = 0; i < upstream.length; i += 2) {
        const lower = upstream[i]!.toLowerCase();
        if (OURS.has(lower)) continue;
        if (lower === "content-type") type = upstream[i + 1];
        out.push(upstream[i]!, upstream[i + 1]!);
      }
      out.push("content-security-policy", INERT_CSP, "x-content-type-options", "nosniff");
      if (forceSaving) {
        const name = fileNameOf(url);
        if (mustBeSaved(name, type)) out.push("content-disposition", attachment(name));
      }
      return out;
    },
    onSend(request, reply, payload, done) {
      reply.header("content-security-policy", INERT_CSP);
      reply.header("x-content-type-options", "nosniff");
      reply.removeHeader("content-disposition");
      if (forceSaving) {
        const type = reply.getHeader("content-type");
        const name = fileNameOf(request.url);
        if (mustBeSaved(name, type === undefined ? undefined : String(type))) reply.header("content-disposition", attachment(name));
      }
      done(null, payload);
    },
  };
}
