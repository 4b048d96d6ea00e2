import semver from "semver";
import type { PackageCoordinates } from "@svc/contracts";

/**
 * Go's module paths and versions as the go command checks them (golang.org/x/mod/module): the
 * rules a module path, a file path inside a module zip and a version must meet, the case
 * encoding of paths in proxy URLs (`!x` for `X`), and the order of versions. Written from the
 * reference's documented rules, so a server-side refusal is what the go command would refuse.
 */

/** Reserved file names on Windows, refused as a path element's part before its first dot (any case). */
const WINDOWS_NAMES = new Set(["CON", "PRN", "AUX", "NUL", ...[1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((n) => [`COM${n}`, `LPT${n}`])]);

const PATH_CHAR = /^[A-Za-z0-9+\-._~]$/;
const FILE_PUNCT = new Set("!#$%&()+,-.=@[]^_{}~ ");
const fileChar = (c: string): boolean => /^[A-Za-z0-9]$/.test(c) || FILE_PUNCT.has(c) || (c.codePointAt(0)! >= 0x80 && /^\p{L}$/u.test(c));

/** Why a path element is refused, or undefined; `file` allows file-name characters and a leading dot. */
function elemError(elem: string, file: boolean): string | undefined {
  if (elem === "") return "empty path element";
  if (/^\.+$/.test(elem)) return `invalid path element "${elem}"`;
  if (elem.startsWith(".") && !file) return "leading dot in path element";
  if (elem.endsWith(".")) return "trailing dot in path element";
  for (const c of elem) if (!(file ? fileChar(c) : PATH_CHAR.test(c))) return `invalid char ${JSON.stringify(c)}`;
  const short = elem.split(".")[0]!;
  if (WINDOWS_NAMES.has(short.toUpperCase())) return `"${short}" disallowed as path element component on Windows`;
  return undefined;
}

function pathError(path: string, file: boolean): string | undefined {
  if (path === "") return "empty string";
  if (path.includes("..")) return "double dot";
  if (path.includes("//")) return "double slash";
  if (path.endsWith("/")) return "trailing slash";
  for (const elem of path.split("/")) {
    const e = elemError(elem, file);
    if (e) return e;
  }
  return undefined;
}

/** A module path's major-version suffix (`/v2`, gopkg.in's `.v1`), "" for none; undefined when the suffix is malformed (`/v1`, `/v0`, `/v2.0`). */
export function pathMajor(path: string): string | undefined {
  if (path.startsWith("gopkg.in/")) {
    const m = /\.v(\d+)(-unstable)?$/.exec(path);
    if (!m || (m[1]!.startsWith("0") && m[1] !== "0")) return undefined;
    return `.v${m[1]}${m[2] ?? ""}`;
  }
  const m = /\/v([0-9.]+)$/.exec(path);
  if (!m || m.index === 0) return "";
  const n = m[1]!;
  if (n.includes(".") || n.startsWith("0") || n === "1") return undefined;
  return `/v${n}`;
}

/** Why a module path is refused (module.CheckPath), or undefined. */
export function modulePathError(path: string): string | undefined {
  const e = pathError(path, false);
  if (e) return e;
  const first = path.split("/")[0]!;
  if (!first.includes(".")) return "missing dot in first path element";
  if (first.startsWith("-")) return "leading dash in first path element";
  const bad = [...first].find((c) => !/^[a-z0-9.-]$/.test(c));
  if (bad !== undefined) return `invalid char ${JSON.stringify(bad)} in first path element`;
  if (pathMajor(path) === undefined) return "invalid version suffix";
  return undefined;
}

/** Why a file path inside a module zip is refused (module.CheckFilePath), or undefined. */
export const filePathError = (path: string): string | undefined => pathError(path, true);

/** The case encoding of proxy URLs: each upper-case letter as `!` and its lower case. */
export const escapePath = (path: string): string => path.replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`);

/** A path or version as a proxy URL encodes it, decoded; undefined when it is not a valid encoding (a bare upper-case letter, `!` not before a lower-case one). */
export function unescapePath(escaped: string): string | undefined {
  let out = "";
  for (let i = 0; i < escaped.length; i++) {
    const c = escaped[i]!;
    if (c.charCodeAt(0) >= 0x80 || /[A-Z]/.test(c)) return undefined;
    if (c === "!") {
      const next = escaped[++i];
      if (next === undefined || !/[a-z]/.test(next)) return undefined;
      out += next.toUpperCase();
    } else out += c;
  }
  return out;
}

const NUM = "(?:0|[1-9]\\d*)";
const PRE_ID = "(?:0|[1-9]\\d*|\\d*[A-Za-z-][0-9A-Za-z-]*)";
/** A canonical semantic version as Go writes one: `vMAJOR.MINOR.PATCH`, a pre-release, no build metadata but `+incompatible`. */
const CANONICAL = new RegExp(`^v(${NUM})\\.${NUM}\\.${NUM}(?:-${PRE_ID}(?:\\.${PRE_ID})*)?(\\+incompatible)?$`);

/** A pseudo-version (`v0.0.0-20191109021931-daa7c04131f5` and its other forms): proxies do not list them. */
const PSEUDO = /^v[0-9]+\.(0\.0-|\d+\.\d+-([^+]*\.)?0\.)\d{14}-[A-Za-z0-9]+(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;

export const isCanonicalVersion = (v: string): boolean => CANONICAL.test(v);
export const isPseudoVersion = (v: string): boolean => PSEUDO.test(v);
export const isIncompatible = (v: string): boolean => v.endsWith("+incompatible");
export const isPrerelease = (v: string): boolean => v.replace(/\+incompatible$/, "").includes("-");

/** Why `version` cannot be a version of module `path` (module.Check and canonical form), or undefined. */
export function versionError(path: string, version: string): string | undefined {
  const m = CANONICAL.exec(version);
  if (!m) {
    return /^v\d/.test(version)
      ? `version ${JSON.stringify(version)} is not canonical: Go versions are vMAJOR.MINOR.PATCH with an optional -pre-release and no build metadata but +incompatible`
      : `malformed semantic version ${JSON.stringify(version)}: Go versions start with v (v1.2.3)`;
  }
  const major = Number(m[1]);
  const incompatible = m[2] !== undefined;
  const suffix = pathMajor(path) ?? "";
  if (suffix === "") {
    if (incompatible && major < 2) return `version ${version}: +incompatible is for major versions 2 and up`;
    if (!incompatible && major >= 2) return `mismatched module path ${path} and version ${version} (want v0 or v1): a module at major version ${major} has the path suffix /v${major}, or the version is v${major}…+incompatible`;
    return undefined;
  }
  if (incompatible) return `version ${version}: +incompatible is not allowed with the major-version suffix of ${path}`;
  const want = Number(suffix.replace(/^[./]v/, "").replace(/-unstable$/, ""));
  // gopkg.in's old pseudo-versions of .v1 paths were v0.0.0-…: the go command accepts them.
  if (suffix === ".v1" && version.startsWith("v0.0.0-")) return undefined;
  if (major !== want) return `mismatched module path ${path} and version ${version} (want v${want})`;
  return undefined;
}

/** Orders two canonical versions as the go command does (semantic version precedence; `+incompatible` ignored). */
export const compareVersions = (a: string, b: string): number => semver.compare(a.replace(/\+incompatible$/, "").slice(1), b.replace(/\+incompatible$/, "").slice(1));

/**
 * What `@latest` answers of the versions listed: the newest release, preferring one that is not
 * `+incompatible`; with no release, the newest pre-release; undefined for none.
 */
export function latestOf(versions: readonly string[]): string | undefined {
  const newest = (vs: string[]) => vs.sort(compareVersions).at(-1);
  const releases = versions.filter((v) => !isPrerelease(v));
  return newest(releases.filter((v) => !isIncompatible(v))) ?? newest(releases) ?? newest([...versions]);
}

/** A request under a Go repository, by its escaped path (the GOPROXY protocol). */
export type GoRequest =
  | { kind: "list" | "latest"; module: string; escaped: string }
  | { kind: "info" | "mod" | "zip"; module: string; escaped: string; version: string }
  /** A path of the protocol's shape whose module or version is not valid: nothing can be there. */
  | { kind: "invalid"; reason: string }
  /** Not a path of the protocol. */
  | undefined;

/**
 * Reads a path under the repository as the GOPROXY protocol lays it out: `<module>/@v/list`,
 * `<module>/@v/<version>.info|.mod|.zip`, `<module>/@latest`, the module path and version case-encoded.
 */
export function parseGoPath(path: string): GoRequest {
  const latest = /^(.+)\/@latest$/.exec(path);
  const at = latest ? undefined : /^(.+)\/@v\/([^/]+)$/.exec(path);
  if (!latest && !at) return undefined;
  const escaped = (latest ?? at)![1]!;
  const module = unescapePath(escaped);
  if (module === undefined) return { kind: "invalid", reason: `invalid escaped module path ${JSON.stringify(escaped)}` };
  const bad = modulePathError(module);
  if (bad) return { kind: "invalid", reason: `malformed module path ${JSON.stringify(module)}: ${bad}` };
  if (latest) return { kind: "latest", module, escaped };
  const file = at![2]!;
  if (file === "list") return { kind: "list", module, escaped };
  const ext = /^(.+)\.(info|mod|zip)$/.exec(file);
  if (!ext) return { kind: "invalid", reason: `no file ${file} in the GOPROXY protocol: @v/ holds list and <version>.info, .mod and .zip` };
  const version = unescapePath(ext[1]!);
  if (version === undefined) return { kind: "invalid", reason: `invalid escaped version ${JSON.stringify(ext[1])}` };
  return { kind: ext[2] as "info" | "mod" | "zip", module, escaped, version };
}

/** The path a version's zip is stored at: the escaped module path, as the go command asks for it. */
export const zipPath = (module: string, version: string): string => `${escapePath(module)}/@v/${escapePath(version)}.zip`;

/** The module version a stored zip is (its events carry it); undefined for other paths. */
export function goCoordinates(path: string): PackageCoordinates | undefined {
  const r = parseGoPath(path);
  if (r?.kind !== "zip" || !isCanonicalVersion(r.version)) return undefined;
  return { format: "go", name: r.module, version: r.version, file: path.slice(path.lastIndexOf("/") + 1) };
}
