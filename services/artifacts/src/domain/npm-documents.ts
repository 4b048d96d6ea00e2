import type { PackageCoordinates } from "@svc/contracts";
import type { NpmPackageRow, NpmVersionRow } from "../store/npm-store.js";

/** npm's package name rule (old mixed-case names included): an optional `@scope/`, then the name; at most 214 characters. */
const NAME = /^(?:@[A-Za-z0-9][\w.-]*\/)?[A-Za-z0-9][\w.-]*$/;
export const isPackageName = (name: string): boolean => name.length <= 214 && NAME.test(name);

/** A package name from the path's leading segments (`@scope`, `name` or `name`), and the segments after it. */
export function packageAt(segments: readonly string[]): { name: string; rest: string[] } | undefined {
  const scoped = segments[0]?.startsWith("@");
  const count = scoped ? 2 : 1;
  if (segments.length < count) return undefined;
  const name = segments.slice(0, count).join("/");
  return isPackageName(name) ? { name, rest: segments.slice(count) } : undefined;
}

/** The tarball file of a version, as the npm registry names it: `<name without scope>-<version>.tgz`. */
export const tarballFile = (name: string, version: string): string => `${name.slice(name.lastIndexOf("/") + 1)}-${version}.tgz`;
export const tarballPath = (name: string, version: string): string => `${name}/-/${tarballFile(name, version)}`;

/** The coordinates of an npm tarball's artifact path (`<name>/-/<file>.tgz`), for its events. */
export function npmCoordinates(path: string): PackageCoordinates | undefined {
  const at = packageAt(path.split("/"));
  if (!at || at.rest.length !== 2 || at.rest[0] !== "-") return undefined;
  const file = at.rest[1]!;
  const prefix = `${at.name.slice(at.name.lastIndexOf("/") + 1)}-`;
  if (!file.startsWith(prefix) || !file.endsWith(".tgz")) return undefined;
  return { format: "npm", name: at.name, version: file.slice(prefix.length, -".tgz".length), file };
}

/** The fields of a version the abbreviated (install) document keeps (npm's registry API, "Abbreviated version object"). */
const ABBREVIATED = [
  "name",
  "version",
  "deprecated",
  "dependencies",
  "optionalDependencies",
  "devDependencies",
  "bundleDependencies",
  "bundledDependencies",
  "peerDependencies",
  "peerDependenciesMeta",
  "acceptDependencies",
  "bin",
  "directories",
  "dist",
  "engines",
  "_hasShrinkwrap",
  "hasInstallScript",
  "cpu",
  "os",
  "libc",
  "funding",
  "license",
] as const;

export const ABBREVIATED_TYPE = "application/vnd.npm.install-v1+json";

/** Whether an Accept header prefers the abbreviated document (npm, pnpm and yarn ask for it to install). */
export function wantsAbbreviated(accept: string | undefined): boolean {
  return accept !== undefined && accept.includes(ABBREVIATED_TYPE);
}

/** A version's manifest as served: its dist.tarball an absolute URL under `base` (the repository's public URL). */
export function servedVersion(v: NpmVersionRow, base: string): Record<string, unknown> {
  const dist = (v.manifest.dist ?? {}) as Record<string, unknown>;
  return { ...v.manifest, dist: { ...dist, tarball: `${base}/${v.tarball}` } };
}

/** The full package document (packument), as `npm view` and `npm publish`'s edits read it. */
export function packument(name: string, pkg: NpmPackageRow, versions: NpmVersionRow[], base: string): Record<string, unknown> {
  const time: Record<string, string> = { created: pkg.created.toISOString(), modified: pkg.modified.toISOString() };
  const out: Record<string, unknown> = {};
  for (const v of versions) {
    out[v.version] = servedVersion(v, base);
    time[v.version] = v.published.toISOString();
  }
  const latest = versions.find((v) => v.version === pkg.distTags.latest) ?? versions[versions.length - 1];
  const readme = latest?.manifest.readme;
  return {
    _id: name,
    _rev: `${pkg.rev}-${pkg.modified.getTime().toString(16)}`,
    name,
    "dist-tags": pkg.distTags,
    versions: out,
    time,
    ...(typeof readme === "string" ? { readme } : {}),
  };
}

/** The abbreviated (install) document: only what a client needs to resolve and install. */
export function abbreviated(name: string, pkg: NpmPackageRow, versions: NpmVersionRow[], base: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of versions) {
    const full = servedVersion(v, base);
    const small: Record<string, unknown> = {};
    for (const f of ABBREVIATED) if (full[f] !== undefined) small[f] = full[f];
    out[v.version] = small;
  }
  return { name, modified: pkg.modified.toISOString(), "dist-tags": pkg.distTags, versions: out };
}
