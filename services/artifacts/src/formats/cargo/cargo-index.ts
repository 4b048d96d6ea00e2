import semver from "semver";
import { invalid, type PackageCoordinates } from "@svc/contracts";

/**
 * Cargo's registry formats (https://doc.rust-lang.org/cargo/reference/registry-index.html and
 * registry-web-api.html): crate names, the sparse index's file layout and lines, and the
 * publish request's metadata as cargo sends it.
 */

/** crates.io's longest crate name. */
export const MAX_NAME = 64;

/** A crate name as crates.io takes it: an ASCII letter, then ASCII letters, digits, `-` and `_`, at most 64 in all. */
export const isCrateName = (name: string): boolean => name.length <= MAX_NAME && /^[A-Za-z][A-Za-z0-9_-]*$/.test(name);

/** The name two crates may not share (crates.io: unique without regard to case, `-` and `_`). */
export const canonicalName = (name: string): string => name.toLowerCase().replace(/_/g, "-");

/** Where the sparse index keeps a crate's file (cargo's layout: 1/, 2/, 3/<first char>/, <first two>/<next two>/), lowercase. */
export function indexPath(name: string): string {
  const n = name.toLowerCase();
  if (n.length === 1) return `1/${n}`;
  if (n.length === 2) return `2/${n}`;
  if (n.length === 3) return `3/${n[0]}/${n}`;
  return `${n.slice(0, 2)}/${n.slice(2, 4)}/${n}`;
}

/** The crate an index path is the file of (its lowercase name); undefined when the path is not one of the layout's. */
export function crateOfIndexPath(segments: readonly string[]): string | undefined {
  const name = segments[segments.length - 1];
  if (name === undefined || !isCrateName(name) || name !== name.toLowerCase()) return undefined;
  return indexPath(name) === segments.join("/") ? name : undefined;
}

/** Where a version's .crate file is stored: what config.json's `dl` template names (the name as published: one spelling per crate). */
export const cratePath = (name: string, version: string): string => `crates/${name}/${name}-${version}.crate`;

/** config.json's `dl` template under the repository's address: the stored file, served by the file routes. */
export const DL_TEMPLATE = "crates/{crate}/{crate}-{version}.crate";

/** The package a stored .crate file is: `crates/<name>/<name>-<version>.crate`. */
export function cargoCoordinates(path: string): PackageCoordinates | undefined {
  const m = /^crates\/([A-Za-z][A-Za-z0-9_-]*)\/([^/]+)\.crate$/.exec(path);
  if (!m || !m[2]!.startsWith(`${m[1]}-`)) return undefined;
  const version = m[2]!.slice(m[1]!.length + 1);
  return isCrateVersion(version) ? { format: "cargo", name: m[1]!, version, file: `${m[2]}.crate` } : undefined;
}

/** SemVer 2.0.0's own grammar (semver.org): what cargo takes as a version, build metadata included. */
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** A semver version as cargo writes one (build metadata allowed); `v1.0.0` and `1.0` are not. */
export const isCrateVersion = (v: string): boolean => v.length <= 128 && SEMVER.test(v);

/** A dependency as the publish request carries it (cargo's `NewCrateDependency`). */
export interface PublishDependency {
  name: string;
  version_req: string;
  features?: string[];
  optional?: boolean;
  default_features?: boolean;
  target?: string | null;
  kind?: "normal" | "dev" | "build";
  registry?: string | null;
  explicit_name_in_toml?: string | null;
}

/** The publish request's JSON (cargo's `NewCrate`): what is read of it. */
export interface PublishMetadata {
  name: string;
  vers: string;
  deps: PublishDependency[];
  features: Record<string, string[]>;
  description?: string | null;
  links?: string | null;
  rust_version?: string | null;
}

/** A dependency as the index lists it (`req`, not `version_req`; the name the crate uses it by, with `package` the real one). */
export interface IndexDependency {
  name: string;
  req: string;
  features: string[];
  optional: boolean;
  default_features: boolean;
  target: string | null;
  kind: "normal" | "dev" | "build";
  registry?: string;
  package?: string;
}

/** One line of a crate's index file. */
export interface IndexEntry {
  name: string;
  vers: string;
  deps: IndexDependency[];
  cksum: string;
  features: Record<string, string[]>;
  features2?: Record<string, string[]>;
  yanked: boolean;
  links: string | null;
  v?: number;
  rust_version?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const strings = (v: unknown, field: string): string[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) throw invalid(field, `${field} must be a list of strings`);
  return v as string[];
};
const optionalString = (v: unknown, field: string): string | null => {
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw invalid(field, `${field} must be a string`);
  return v;
};

/** The publish request's JSON, checked: what cargo sends, or a refusal naming the field. */
export function readPublishMetadata(text: string): PublishMetadata {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw invalid("body", "the publish request's metadata is not valid JSON");
  }
  if (!isObject(doc)) throw invalid("body", "the publish request's metadata is not a JSON object");
  const name = doc.name;
  if (typeof name !== "string" || !isCrateName(name)) {
    throw invalid("name", `${typeof name === "string" ? `"${name}"` : "the name"} is not a valid crate name: an ASCII letter, then ASCII letters, digits, - and _, at most ${MAX_NAME} characters`);
  }
  const vers = doc.vers;
  if (typeof vers !== "string" || !isCrateVersion(vers)) throw invalid("vers", `${typeof vers === "string" ? `"${vers}"` : "the version"} is not a semver version (such as 1.0.0)`);
  if (!Array.isArray(doc.deps)) throw invalid("deps", "deps must be a list");
  const deps = doc.deps.map((d: unknown, i: number): PublishDependency => {
    const at = `deps[${i}]`;
    if (!isObject(d)) throw invalid(at, `${at} must be an object`);
    if (typeof d.name !== "string" || !isCrateName(d.name)) throw invalid(`${at}.name`, `${at}.name is not a valid crate name`);
    if (typeof d.version_req !== "string" || d.version_req.trim() === "") throw invalid(`${at}.version_req`, `${at}.version_req must be a version requirement`);
    const kind = d.kind ?? "normal";
    if (kind !== "normal" && kind !== "dev" && kind !== "build") throw invalid(`${at}.kind`, `${at}.kind must be normal, dev or build`);
    const explicit = optionalString(d.explicit_name_in_toml, `${at}.explicit_name_in_toml`);
    if (explicit !== null && !isCrateName(explicit)) throw invalid(`${at}.explicit_name_in_toml`, `${at}.explicit_name_in_toml is not a valid crate name`);
    return {
      name: d.name,
      version_req: d.version_req,
      features: strings(d.features, `${at}.features`),
      optional: d.optional === true,
      default_features: d.default_features !== false,
      target: optionalString(d.target, `${at}.target`),
      kind,
      registry: optionalString(d.registry, `${at}.registry`),
      explicit_name_in_toml: explicit,
    };
  });
  const features: Record<string, string[]> = {};
  if (doc.features !== undefined && doc.features !== null) {
    if (!isObject(doc.features)) throw invalid("features", "features must be an object of lists");
    for (const [k, v] of Object.entries(doc.features)) features[k] = strings(v, `features.${k}`);
  }
  return { name, vers, deps, features, description: optionalString(doc.description, "description"), links: optionalString(doc.links, "links"), rust_version: optionalString(doc.rust_version, "rust_version") };
}

/** A feature value of the newer syntax (`dep:x`, `x?/f`) that cargo before 1.60 cannot read: crates.io lists such features in `features2`. */
const newSyntax = (values: readonly string[]) => values.some((v) => v.startsWith("dep:") || v.includes("?/"));

/** The index line of a published version, as crates.io writes it. */
export function indexEntry(m: PublishMetadata, cksum: string): IndexEntry {
  const deps = m.deps.map((d): IndexDependency => {
    const renamed = d.explicit_name_in_toml ?? null;
    return {
      name: renamed ?? d.name,
      req: d.version_req,
      features: d.features ?? [],
      optional: d.optional ?? false,
      default_features: d.default_features ?? true,
      target: d.target ?? null,
      kind: d.kind ?? "normal",
      // A dependency of this same registry has none (cargo sends none for it); another registry's is named by its index URL.
      ...(d.registry ? { registry: d.registry } : {}),
      ...(renamed !== null ? { package: d.name } : {}),
    };
  });
  const features: Record<string, string[]> = {};
  const features2: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(m.features)) (newSyntax(v) ? features2 : features)[k] = v;
  const two = Object.keys(features2).length > 0;
  return {
    name: m.name,
    vers: m.vers,
    deps,
    cksum,
    features,
    ...(two ? { features2 } : {}),
    yanked: false,
    links: m.links ?? null,
    ...(two ? { v: 2 } : {}),
    ...(m.rust_version ? { rust_version: m.rust_version } : {}),
  };
}

/** The highest version of `versions` that is not yanked (else the highest), as crates.io's `max_version`. */
export function maxVersion(versions: readonly { vers: string; yanked: boolean }[]): string | undefined {
  const pick = (vs: readonly { vers: string }[]) => vs.map((v) => v.vers).sort(semver.rcompare)[0];
  return pick(versions.filter((v) => !v.yanked)) ?? pick(versions);
}
