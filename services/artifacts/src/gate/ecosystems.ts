import * as pep440 from "@renovatebot/pep440";
import semver from "semver";
import { compareMavenVersions, inMavenRange, parseMavenRange } from "./maven-version.js";

/**
 * The OSV ecosystems the gate screens (formats name theirs: Format.ecosystem), each with its own
 * version order, name rule and range syntax for the deny list. OSV's names: `npm`, `PyPI`, `Maven`,
 * `Go`, `crates.io`.
 */
export const ECOSYSTEMS = ["npm", "PyPI", "Maven", "Go", "crates.io"] as const;
export type Ecosystem = (typeof ECOSYSTEMS)[number];

export const isEcosystem = (e: string): e is Ecosystem => (ECOSYSTEMS as readonly string[]).includes(e);

interface Rules {
  /** Orders two versions; undefined when either is not a version of this ecosystem. */
  compare(a: string, b: string): number | undefined;
  /** The name as the ecosystem compares names (PyPI: PEP 503 normalised). */
  name(n: string): string;
  /** A deny list range in the ecosystem's syntax: a test, or a reason it is not one. */
  range(r: string): { ok: true; test: (version: string) => boolean } | { ok: false; reason: string };
  /** What the range syntax is, for messages. */
  syntax: string;
}

const EVERY = new Set(["", "*"]);

const RULES: Record<Ecosystem, Rules> = {
  npm: {
    compare: (a, b) => (semver.valid(a) && semver.valid(b) ? semver.compare(a, b) : undefined),
    name: (n) => n,
    range: (r) => {
      const range = semver.validRange(r);
      return range === null ? { ok: false, reason: `"${r}" is not an npm semver range (such as <1.2.3, ^2.0.0 or 1.0.0 - 1.4.0)` } : { ok: true, test: (v) => semver.satisfies(v, range, { includePrerelease: true }) };
    },
    syntax: "an npm semver range",
  },
  PyPI: {
    compare: (a, b) => (pep440.valid(a) && pep440.valid(b) ? pep440.compare(a, b) : undefined),
    name: (n) => n.toLowerCase().replace(/[-_.]+/g, "-"),
    range: (r) => {
      // A bare version means exactly that version, as pip reads `==`.
      const spec = pep440.valid(r) ? `==${r}` : r;
      return pep440.validRange(spec) ? { ok: true, test: (v) => pep440.valid(v) !== null && pep440.satisfies(v, spec, { prereleases: true }) } : { ok: false, reason: `"${r}" is not a PEP 440 version specifier (such as <2.0, >=1.0,<1.4 or ==1.2.*)` };
    },
    syntax: "a PEP 440 specifier",
  },
  // Go's versions are semantic versions written with a v (v1.2.3, v2.0.0+incompatible); OSV's Go records drop the v.
  Go: {
    compare: (a, b) => (semver.valid(a) && semver.valid(b) ? semver.compare(a, b) : undefined),
    name: (n) => n,
    range: (r) => {
      const range = semver.validRange(r);
      return range === null ? { ok: false, reason: `"${r}" is not a semver range (such as <1.2.3, >=1.0.0 <1.4.0 or v1.2.3)` } : { ok: true, test: (v) => semver.satisfies(v, range, { includePrerelease: true }) };
    },
    syntax: "a semver range",
  },
  Maven: {
    compare: (a, b) => compareMavenVersions(a, b),
    name: (n) => n,
    range: (r) => {
      const intervals = parseMavenRange(r);
      return intervals ? { ok: true, test: (v) => inMavenRange(v, intervals) } : { ok: false, reason: `"${r}" is not a Maven version range (such as [1.0,2.0), (,1.5] or [1.2])` };
    },
    syntax: "a Maven version range",
  },
  "crates.io": {
    compare: (a, b) => (semver.valid(a) && semver.valid(b) ? semver.compare(a, b) : undefined),
    // Two crates never share a name without regard to case, - and _ (crates.io's rule).
    name: (n) => n.toLowerCase().replace(/_/g, "-"),
    range: (r) => {
      // A bare version means exactly that version; requirements are separated by commas, as Cargo.toml writes them.
      const spec = semver.valid(r) ? `=${r}` : r.replace(/,/g, " ");
      const range = semver.validRange(spec);
      return range === null ? { ok: false, reason: `"${r}" is not a semver requirement (such as <1.2.3, >=1.0, <1.4 or 1.2.3)` } : { ok: true, test: (v) => semver.satisfies(v, range, { includePrerelease: true }) };
    },
    syntax: "a semver requirement",
  },
};

export const packageName = (ecosystem: Ecosystem, name: string): string => RULES[ecosystem].name(name);

/** A deny list range: `*` or blank is every version. */
export function versionRange(ecosystem: Ecosystem, range: string): { ok: true; test: (version: string) => boolean } | { ok: false; reason: string } {
  if (EVERY.has(range.trim())) return { ok: true, test: () => true };
  return RULES[ecosystem].range(range.trim());
}

/** One entry of an OSV record's `affected` (https://ossf.github.io/osv-schema/#affected-fields). */
export interface OsvAffected {
  package?: { ecosystem?: string; name?: string };
  ranges?: { type?: string; events?: Record<string, string>[] }[];
  versions?: string[];
}

/**
 * Whether `version` is affected, per the OSV schema's evaluation: listed in `versions`, or inside
 * a SEMVER or ECOSYSTEM range whose events (sorted by version; introduced "0" first) open it
 * (`introduced`) and do not close it again (`fixed`, `last_affected`). GIT ranges name commits,
 * not versions, and are skipped; a range whose versions cannot be ordered does not match.
 */
export function affects(ecosystem: Ecosystem, version: string, affected: OsvAffected): boolean {
  const rules = RULES[ecosystem];
  const same = (a: string) => (ecosystem === "npm" ? a === version : rules.compare(a, version) === 0);
  if (affected.versions?.some(same)) return true;
  for (const range of affected.ranges ?? []) {
    if (range.type !== "SEMVER" && range.type !== "ECOSYSTEM") continue;
    const cmp = range.type === "SEMVER" ? (a: string, b: string) => (semver.valid(a) && semver.valid(b) ? semver.compare(a, b) : undefined) : rules.compare;
    const events = (range.events ?? []).flatMap((e) => {
      const [kind, at] = Object.entries(e)[0] ?? [];
      return kind && typeof at === "string" && ["introduced", "fixed", "last_affected"].includes(kind) ? [{ kind, at }] : [];
    });
    let ordered = true;
    const key = (at: string) => (at === "0" ? undefined : at);
    const sorted = [...events].sort((x, y) => {
      const a = key(x.at);
      const b = key(y.at);
      if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
      const c = cmp(a, b);
      if (c === undefined) ordered = false;
      return c ?? 0;
    });
    if (!ordered) continue;
    let inside = false;
    for (const e of sorted) {
      const c = e.at === "0" ? 1 : cmp(version, e.at);
      if (c === undefined) {
        inside = false;
        break;
      }
      if (e.kind === "introduced" && c >= 0) inside = true;
      else if (e.kind === "fixed" && c >= 0) inside = false;
      else if (e.kind === "last_affected" && c > 0) inside = false;
    }
    if (inside) return true;
  }
  return false;
}
