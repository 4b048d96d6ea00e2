/** A file link read from an upstream PEP 503 project page. */
export interface UpstreamFileLink {
  filename: string;
  /** Absolute URL of the file at the upstream, fragment removed. */
  url: string;
  /** The `#sha256=` the upstream declares, lower-case hex; undefined when it declares none. */
  sha256?: string;
  requiresPython?: string;
  yanked?: string;
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
