import { createHash } from "node:crypto";
import { tarballPath } from "./npm-documents.js";

/** A packument as an upstream registry answers it: only the parts the proxy reads or rewrites. */
export interface UpstreamPackument {
  name: string;
  "dist-tags"?: Record<string, string>;
  versions?: Record<string, { dist?: { tarball?: string; integrity?: string; shasum?: string } & Record<string, unknown> } & Record<string, unknown>>;
  time?: Record<string, string>;
  [key: string]: unknown;
}

/**
 * Rewrites every `dist.tarball` of a proxied packument to this server (`<base>/<name>/-/<file>`),
 * so a client fetches tarballs through the proxy and never from the upstream. Answers a copy;
 * the upstream's document is left as it was.
 */
export function rewriteTarballUrls(doc: UpstreamPackument, base: string): UpstreamPackument {
  const root = base.replace(/\/+$/, "");
  const versions: NonNullable<UpstreamPackument["versions"]> = {};
  for (const [version, manifest] of Object.entries(doc.versions ?? {})) {
    versions[version] = { ...manifest, dist: { ...manifest.dist, tarball: `${root}/${tarballPath(doc.name, version)}` } };
  }
  return { ...doc, versions };
}

/** What an upstream packument declares a version's tarball digests to be. */
export interface DeclaredDigest {
  integrity?: string;
  shasum?: string;
}

/**
 * Checks fetched tarball bytes against the packument's `dist.integrity` (every sha512/sha384/sha256
 * entry of the SRI string it can check; one match is enough, as npm does) or, without one, its
 * `dist.shasum`. Answers why not when they differ or nothing is declared to check against.
 */
export function checkTarballDigest(bytes: Uint8Array, declared: DeclaredDigest): { ok: true } | { ok: false; reason: string } {
  if (declared.integrity) {
    const entries = declared.integrity.trim().split(/\s+/).map((e) => e.split("?")[0]!).filter((e) => /^sha(256|384|512)-/.test(e));
    if (entries.length === 0) return { ok: false, reason: `integrity ${declared.integrity} names no sha256/384/512 digest` };
    for (const entry of entries) {
      const dash = entry.indexOf("-");
      if (createHash(entry.slice(0, dash)).update(bytes).digest("base64") === entry.slice(dash + 1)) return { ok: true };
    }
    return { ok: false, reason: `tarball does not match the declared integrity ${declared.integrity}` };
  }
  if (declared.shasum) {
    const actual = createHash("sha1").update(bytes).digest("hex");
    return actual === declared.shasum.toLowerCase() ? { ok: true } : { ok: false, reason: `tarball sha1 ${actual} does not match the declared shasum ${declared.shasum}` };
  }
  return { ok: false, reason: "the upstream declares no integrity or shasum for this tarball" };
}

/**
 * Merges one package's packuments from a group's members, in member order: versions merged
 * (the first member that has a version wins it), `dist-tags` taken whole from the first member
 * that has the package, `time` entries merged like versions. Answers undefined when no member has it.
 */
export function mergePackuments(docs: readonly (UpstreamPackument | undefined)[]): UpstreamPackument | undefined {
  const present = docs.filter((d): d is UpstreamPackument => d !== undefined);
  const first = present[0];
  if (!first) return undefined;
  const versions: NonNullable<UpstreamPackument["versions"]> = {};
  const time: Record<string, string> = {};
  for (const doc of present) {
    for (const [v, m] of Object.entries(doc.versions ?? {})) if (!(v in versions)) versions[v] = m;
    for (const [k, t] of Object.entries(doc.time ?? {})) if (!(k in time)) time[k] = t;
  }
  return { ...first, "dist-tags": { ...(first["dist-tags"] ?? {}) }, versions, ...(Object.keys(time).length > 0 ? { time } : {}) };
}
