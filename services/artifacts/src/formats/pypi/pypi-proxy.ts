import { invalid } from "@svc/contracts";
import { filePath, isProjectName, isVersion, normalizeProject, projectOfFile, versionOfWheel, type ListedFile } from "./pypi-index.js";

/** A file link read from an upstream PEP 503 project page. */
export interface UpstreamFileLink {
  filename: string;
  /** Absolute URL of the file at the upstream, fragment removed. */
  url: string;
  /** The `#sha256=` the upstream declares, lower-case hex; undefined when it declares none. */
  sha256?: string;
  requiresPython?: string;
  yanked?: string;
  /** PEP 700's `upload-time` and `size`, when the upstream serves PEP 691 JSON with them. */
  uploaded?: Date;
  size?: number;
}

const unescapeHtml = (s: string): string =>
  s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&#x27;/g, "'").replace(/&amp;/g, "&");

/** Attribute values of one start tag (`name="v"`, `name='v'`, bare `name`), keys lower-cased. */
function attributes(tag: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of tag.matchAll(/([A-Za-z_:][-A-Za-z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g)) {
    out.set(m[1]!.toLowerCase(), unescapeHtml(m[2] ?? m[3] ?? m[4] ?? ""));
  }
  return out;
}

/**
 * Reads the file links of an upstream PEP 503 project page, resolving each href against the
 * page's own URL (upstream pages link relatively or to another host, as PyPI does to its CDN).
 */
export function parseProjectPage(html: string, pageUrl: string): UpstreamFileLink[] {
  const links: UpstreamFileLink[] = [];
  for (const m of html.matchAll(/<a\s([^>]*)>([^<]*)<\/a>/gi)) {
    const attrs = attributes(m[1]!);
    const href = attrs.get("href");
    if (!href) continue;
    const url = new URL(href, pageUrl);
    const fragment = /(?:^|&)sha256=([0-9a-fA-F]{64})(?:&|$)/.exec(url.hash.slice(1));
    url.hash = "";
    const filename = unescapeHtml(m[2]!.trim()) || decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf("/") + 1));
    const link: UpstreamFileLink = { filename, url: url.toString() };
    if (fragment) link.sha256 = fragment[1]!.toLowerCase();
    const requires = attrs.get("data-requires-python");
    if (requires) link.requiresPython = requires;
    if (attrs.has("data-yanked")) link.yanked = attrs.get("data-yanked")!;
    links.push(link);
  }
  return links;
}

/** A group's project page files: every member's, the first member that has a filename wins it. */
export function mergeFileLinks<T extends { filename: string }>(members: readonly (readonly T[])[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const files of members) for (const f of files) if (!seen.has(f.filename)) { seen.add(f.filename); out.push(f); }
  return out;
}

/** A file of a PEP 691 project page, as an upstream may answer it. */
interface JsonFile {
  filename?: unknown;
  url?: unknown;
  hashes?: unknown;
  "requires-python"?: unknown;
  yanked?: unknown;
  size?: unknown;
  "upload-time"?: unknown;
}

/** Reads the files of an upstream PEP 691 JSON project page (with PEP 700's `upload-time` and `size`), URLs resolved against the page's. */
export function parseProjectJson(json: string, pageUrl: string): UpstreamFileLink[] {
  const doc = JSON.parse(json) as { files?: unknown };
  if (!Array.isArray(doc.files)) throw new Error("a PEP 691 project page has a files list");
  const links: UpstreamFileLink[] = [];
  for (const f of doc.files as JsonFile[]) {
    if (typeof f !== "object" || f === null || typeof f.filename !== "string" || typeof f.url !== "string") continue;
    const url = new URL(f.url, pageUrl);
    url.hash = "";
    const link: UpstreamFileLink = { filename: f.filename, url: url.toString() };
    const sha256 = typeof f.hashes === "object" && f.hashes !== null ? (f.hashes as Record<string, unknown>).sha256 : undefined;
    if (typeof sha256 === "string" && /^[0-9a-fA-F]{64}$/.test(sha256)) link.sha256 = sha256.toLowerCase();
    if (typeof f["requires-python"] === "string" && f["requires-python"] !== "") link.requiresPython = f["requires-python"];
    if (f.yanked === true) link.yanked = "";
    else if (typeof f.yanked === "string") link.yanked = f.yanked;
    if (typeof f.size === "number" && Number.isSafeInteger(f.size) && f.size >= 0) link.size = f.size;
    const at = typeof f["upload-time"] === "string" ? new Date(f["upload-time"]) : undefined;
    if (at && !Number.isNaN(at.getTime())) link.uploaded = at;
    links.push(link);
  }
  return links;
}

/** An upstream project page as it was answered: PEP 691 JSON (an object) or PEP 503 HTML. */
export const readProjectPage = (body: string, pageUrl: string): UpstreamFileLink[] => (body.trimStart().startsWith("{") ? parseProjectJson(body, pageUrl) : parseProjectPage(body, pageUrl));

/** Why an upstream's answer is not a project page (it is then a failure, never cached); undefined: it is. */
export function invalidProjectPage(body: string): string | undefined {
  if (body.trimStart().startsWith("{")) {
    try {
      parseProjectJson(body, "http://upstream/");
      return undefined;
    } catch {
      return "the upstream answered JSON that is not a PEP 691 project page";
    }
  }
  return /<(!doctype|html|a\s)/i.test(body) ? undefined : "the upstream answered a project page that is neither PEP 691 JSON nor PEP 503 HTML";
}

/**
 * The distribution a file name is of `project` (the name as the file spells it, and the version
 * it names): a wheel's first two fields, an sdist's name and version around the dash after which
 * the rest is a version; undefined for a file of another project or another kind (eggs, .exe).
 */
export function distOfFile(filename: string, project: string): { name: string; version: string } | undefined {
  const wheel = versionOfWheel(filename);
  if (wheel !== undefined) return projectOfFile(filename, wheel) === project ? { name: filename.split("-")[0]!, version: wheel } : undefined;
  const ext = /\.(tar\.gz|zip)$/.exec(filename);
  if (!ext) return undefined;
  const stem = filename.slice(0, -ext[0].length);
  for (let at = stem.indexOf("-"); at > 0; at = stem.indexOf("-", at + 1)) {
    const name = stem.slice(0, at);
    const version = stem.slice(at + 1);
    // A version begins with a digit (PEP 440), so the project "a" has no file "a-b-1.0.tar.gz": that is project "a-b"'s.
    if (normalizeProject(name) === project && /^v?\d/i.test(version) && isVersion(version) && projectOfFile(filename, version) === project) return { name, version };
  }
  return undefined;
}

/** A proxy repository's file as an upstream link makes it: where it is stored here (`packages/<project>/<version>/<file>`), from where. */
export interface ProxiedFile extends ListedFile {
  name: string;
  link: UpstreamFileLink;
}

/** The files of an upstream project page this server can serve: distributions of `project` (wheels and sdists), each with its path here. */
export function proxiedFiles(project: string, links: readonly UpstreamFileLink[]): ProxiedFile[] {
  return links.flatMap((link) => {
    const dist = distOfFile(link.filename, project);
    if (!dist) return [];
    const file: ProxiedFile = { name: dist.name, link, filename: link.filename, version: dist.version, path: filePath(project, dist.version, link.filename), requiresPython: link.requiresPython ?? null, yanked: link.yanked ?? null };
    if (link.sha256) file.sha256 = link.sha256;
    if (link.size !== undefined) file.size = link.size;
    if (link.uploaded) file.uploaded = link.uploaded;
    return [file];
  });
}

/** Each version's publish time (its earliest file's upload time), undefined when no file of it says. */
export function publishTimes(files: readonly ProxiedFile[]): Map<string, Date | undefined> {
  const out = new Map<string, Date | undefined>();
  for (const f of files) {
    const known = out.get(f.version);
    out.set(f.version, known && f.uploaded ? (known < f.uploaded ? known : f.uploaded) : (known ?? f.uploaded));
  }
  return out;
}

/** An import's PyPI item: "project" (every version its upstream lists) or "project==version" (the version as its files spell it). */
export function pypiSpec(spec: string): { name: string; version?: string } {
  const at = spec.indexOf("==");
  const name = (at >= 0 ? spec.slice(0, at) : spec).trim();
  const version = at >= 0 ? spec.slice(at + 2).trim() : undefined;
  if (!isProjectName(name) || (version !== undefined && !isVersion(version))) throw invalid("packages", `${spec} is not a PyPI project name, or project==version`);
  return version === undefined ? { name: normalizeProject(name) } : { name: normalizeProject(name), version };
}
