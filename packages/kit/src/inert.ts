/**
 * Which artifact answers a browser must save rather than open, and the Content-Disposition that
 * says so: the gateway's inert answers (services/gateway/src/proxy/inert-content.ts) and the
 * artifacts service's redirects to the object store (svc.storage.s3.redirect, whose signed URL
 * carries the same choice) decide alike.
 */

/**
 * Types a browser shows as text or an image, or saves: never a document that runs anything.
 * Not `application/octet-stream`: the artifacts service answers a file of an unknown extension
 * with it or with no type at all (HEAD, a large file); both are saved, the same for every request.
 */
const INERT_TYPES = new Set([
  "text/plain",
  "text/csv",
  "text/css",
  "text/markdown",
  "application/json",
  "application/java-archive",
  "application/x-java-archive",
  "application/zip",
  "application/gzip",
  "application/x-gzip",
  "application/x-tar",
  "application/x-bzip2",
  "application/x-xz",
  "application/zstd",
  "application/pgp-signature",
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/bmp",
  "image/x-icon",
]);

/** Extensions a browser renders or runs, whatever type they are served with. */
const ACTIVE_EXTENSIONS = new Set([
  "html", "htm", "shtml", "xhtml", "xht", "mht", "mhtml", "svg", "svgz", "xml", "xsl", "xslt", "rdf",
  "js", "mjs", "cjs", "pdf", "swf", "htc", "hta", "vtt",
]);

/** Whether an answer of this type for this path must be saved rather than opened. */
export function mustBeSaved(name: string, contentType: string | undefined): boolean {
  const dot = name.lastIndexOf(".");
  if (dot >= 0 && ACTIVE_EXTENSIONS.has(name.slice(dot + 1).toLowerCase())) return true;
  if (contentType === undefined) return true;
  const semi = contentType.indexOf(";");
  const essence = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return !(INERT_TYPES.has(essence) || essence.endsWith("+json"));
}

/**
 * `attachment` with the file's name: a plain ASCII `filename` (anything else becomes `_`) and,
 * when that lost something, the exact name as RFC 6266 `filename*`.
 */
export function attachment(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._+-]/g, "_").replace(/^\.+/, "_").slice(0, 200);
  // A folder's answer (an index page) has no name of its own.
  if (safe === "") return `attachment; filename="download"`;
  if (safe === name) return `attachment; filename="${safe}"`;
  const exact = encodeURIComponent(name.slice(0, 200)).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${safe}"; filename*=UTF-8''${exact}`;
}
