import type { DeclaredDigests } from "../../domain/upload-checks.js";
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

/**
 * The digests an npm `integrity` (SRI: the strongest of its sha512/sha384/sha256 entries, as npm
 * checks) or `shasum` declares, as the artifact service checks them; undefined when neither names one.
 */
export function sriDigests(integrity: string | undefined, shasum: string | undefined): DeclaredDigests | undefined {
  const entries = (integrity ?? "").trim().split(/\s+/).map((e) => e.split("?")[0]!);
  for (const algorithm of ["sha512", "sha384", "sha256"] as const) {
    const entry = entries.find((e) => e.startsWith(`${algorithm}-`));
    if (entry) return { [algorithm]: [{ hex: Buffer.from(entry.slice(algorithm.length + 1), "base64").toString("hex"), header: "integrity" }] };
  }
  if (shasum && /^[0-9a-fA-F]{40}$/.test(shasum)) return { sha1: [{ hex: shasum.toLowerCase(), header: "shasum" }] };
  return undefined;
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
