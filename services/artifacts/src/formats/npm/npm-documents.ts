import type { PackageCoordinates } from "@svc/contracts";
import type { NpmPackageRow, NpmVersionRow } from "./npm-store.js";

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

/**
 * The fields of a version's manifest that are kept, those clients and `npm view` read (npm's
 * registry API, "Version object", and what npm, pnpm and yarn read of it). Any other field a
 * publish sends (`files`, `publishConfig`, a tool's own settings, anything bulky) is dropped as
 * it is read; `readme` is kept, cut to README_CHARS, and served once for the package.
 */
export const KEPT_FIELDS: ReadonlySet<string> = new Set([
  "name",
  "version",
  "description",
  "keywords",
  "homepage",
  "bugs",
  "license",
  "licenses",
  "author",
  "contributors",
  "maintainers",
  "funding",
  "repository",
  "main",
  "module",
  "browser",
  "types",
  "typings",
  "type",
  "exports",
  "imports",
  "bin",
  "man",
  "directories",
  "scripts",
  "dependencies",
  "devDependencies",
  "peerDependencies",
  "peerDependenciesMeta",
  "optionalDependencies",
  "bundleDependencies",
  "bundledDependencies",
  "acceptDependencies",
  "engines",
  "os",
  "cpu",
  "libc",
  "deprecated",
  "dist",
  "gitHead",
  "readme",
  "readmeFilename",
  "hasInstallScript",
  "_hasShrinkwrap",
  "_id",
  "_npmUser",
  "_npmVersion",
  "_nodeVersion",
]);

/** The readme kept of a version, in characters: npmjs's cut (a document is fetched by every install). */
export const README_CHARS = 65536;

/** The fields of a version the abbreviated (install) document keeps (npm's registry API, "Abbreviated version object"). */
export const ABBREVIATED_FIELDS: readonly string[] = [
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

/**
 * A version's manifest as served: the fields kept but its readme (served once for the package),
 * so a version stored before manifests were cut down is served cut down too; its dist.tarball
 * an absolute URL under `base` (the repository's public URL).
 */
export function servedVersion(v: NpmVersionRow, base: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(v.manifest)) if (field !== "readme" && KEPT_FIELDS.has(field)) out[field] = value;
  const dist = (v.manifest.dist ?? {}) as Record<string, unknown>;
  out.dist = { ...dist, tarball: `${base}/${v.tarball}` };
  return out;
}

/** The full package document (packument), as `npm view` and `npm publish`'s edits read it; `readme`: its latest version's. */
export function packument(name: string, pkg: NpmPackageRow, versions: NpmVersionRow[], base: string, readme?: string): Record<string, unknown> {
  const time: Record<string, string> = { created: pkg.created.toISOString(), modified: pkg.modified.toISOString() };
  const out: Record<string, unknown> = {};
  for (const v of versions) {
    out[v.version] = servedVersion(v, base);
    time[v.version] = v.published.toISOString();
  }
  return {
    _id: name,
    _rev: `${pkg.rev}-${pkg.modified.getTime().toString(16)}`,
    name,
    "dist-tags": pkg.distTags,
    versions: out,
    time,
    ...(readme !== undefined ? { readme: readme.slice(0, README_CHARS) } : {}),
  };
}

/** The abbreviated (install) document: only what a client needs to resolve and install. */
export function abbreviated(name: string, pkg: NpmPackageRow, versions: NpmVersionRow[], base: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of versions) {
    const full = servedVersion(v, base);
    const small: Record<string, unknown> = {};
    for (const f of ABBREVIATED_FIELDS) if (full[f] !== undefined) small[f] = full[f];
    out[v.version] = small;
  }
  return { name, modified: pkg.modified.toISOString(), "dist-tags": pkg.distTags, versions: out };
}
