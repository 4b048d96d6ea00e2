import { createHash } from "node:crypto";
import { escapeXml } from "./maven-metadata.js";

/** What an upstream artifact-level `maven-metadata.xml` lists: its versions in its order, and its latest/release. */
export interface UpstreamArtifactMetadata {
  versions: string[];
  latest?: string;
  release?: string;
  lastUpdated?: string;
}

const unescapeXml = (s: string): string =>
  s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");
const textOf = (xml: string, tag: string): string | undefined => {
  const m = new RegExp(`<${tag}>\\s*([^<]*?)\\s*</${tag}>`).exec(xml);
  return m ? unescapeXml(m[1]!) : undefined;
};

/** Reads the versioning part of an upstream artifact-level `maven-metadata.xml`. */
export function parseArtifactMetadata(xml: string): UpstreamArtifactMetadata {
  const block = /<versions>([\s\S]*?)<\/versions>/.exec(xml)?.[1] ?? "";
  const versions = [...block.matchAll(/<version>\s*([^<]*?)\s*<\/version>/g)].map((m) => unescapeXml(m[1]!));
  const out: UpstreamArtifactMetadata = { versions };
  for (const key of ["latest", "release", "lastUpdated"] as const) {
    const v = textOf(xml, key);
    if (v) out[key] = v;
  }
  return out;
}

/**
 * A group's artifact metadata: versions of every member in member order (first occurrence
 * kept), `latest`/`release` the last listed (Maven lists oldest first) and `lastUpdated` the newest.
 */
export function mergeArtifactMetadata(members: readonly UpstreamArtifactMetadata[]): UpstreamArtifactMetadata | undefined {
  if (members.length === 0) return undefined;
  const versions = [...new Set(members.flatMap((m) => m.versions))];
  const out: UpstreamArtifactMetadata = { versions };
  const latest = versions[versions.length - 1];
  const release = versions.filter((v) => !v.endsWith("-SNAPSHOT")).pop();
  const updated = members.map((m) => m.lastUpdated).filter((u): u is string => !!u).sort().pop();
  if (latest) out.latest = latest;
  if (release) out.release = release;
  if (updated) out.lastUpdated = updated;
  return out;
}

/**
 * An upstream artifact-level `maven-metadata.xml` with the `hidden` versions taken out of
 * `<versions>`: a hidden `<latest>` becomes the last version still listed (Maven lists oldest
 * first), a hidden `<release>` the last listed that is no snapshot; either is left out when none
 * is. The rest of the document is the upstream's, byte for byte; nothing hidden: the same text.
 */
export function filterArtifactMetadata(xml: string, hidden: ReadonlySet<string>): string {
  if (hidden.size === 0) return xml;
  const kept = parseArtifactMetadata(xml).versions.filter((v) => !hidden.has(v));
  let out = xml.replace(/<versions>[\s\S]*?<\/versions>/, (block) =>
    block.replace(/[ \t]*<version>\s*([^<]*?)\s*<\/version>[ \t]*(\r?\n)?/g, (line, v: string) => (hidden.has(unescapeXml(v)) ? "" : line)),
  );
  const repair = (tag: "latest" | "release", to: string | undefined) => {
    const current = textOf(out, tag);
    if (current === undefined || !hidden.has(current)) return;
    out = to === undefined ? out.replace(new RegExp(`[ \\t]*<${tag}>[^<]*</${tag}>[ \\t]*(\\r?\\n)?`), "") : out.replace(new RegExp(`<${tag}>[^<]*</${tag}>`), `<${tag}>${escapeXml(to)}</${tag}>`);
  };
  repair("latest", kept[kept.length - 1]);
  repair("release", kept.filter((v) => !v.endsWith("-SNAPSHOT")).pop());
  return out;
}

/** The SHA-1 an upstream's `.sha1` text declares (the hex digest, optionally followed by a file name); undefined when it holds none. */
export function declaredSha1(sha1Text: string): string | undefined {
  return /^\s*([0-9a-fA-F]{40})(?:\s|$)/.exec(sha1Text)?.[1]?.toLowerCase();
}

/**
 * Checks a fetched file against the upstream's `.sha1` text (the hex digest, optionally followed
 * by a file name, as some repositories write it). Answers why not when they differ or it is unreadable.
 */
export function checkSha1(bytes: Uint8Array, sha1Text: string): { ok: true } | { ok: false; reason: string } {
  const declared = declaredSha1(sha1Text);
  if (!declared) return { ok: false, reason: "the upstream .sha1 holds no sha1 digest" };
  const actual = createHash("sha1").update(bytes).digest("hex");
  return actual === declared ? { ok: true } : { ok: false, reason: `file sha1 ${actual} does not match the upstream's ${declared}` };
}
