import { gunzip } from "node:zlib";
import { promisify } from "node:util";
import semver from "semver";
import { ServiceError, invalid } from "@svc/contracts";
import type { OsvAffected } from "../../gate/ecosystems.js";
import type { AdvisoryAudit, AuditHit } from "../../gate/audit.js";

/** The largest audit body read, as sent (npm gzips it) and once unpacked. */
export const MAX_AUDIT_BYTES = 8 * 1024 * 1024;
export const MAX_AUDIT_UNPACKED_BYTES = 64 * 1024 * 1024;
/** The most packages, and versions of one package, one audit may name. */
const MAX_PACKAGES = 100_000;
const MAX_VERSIONS = 1_000;

const unpack = promisify(gunzip);

/** One advisory as npm's bulk advisory endpoint answers it (what @npmcli/metavuln-calculator reads). */
export interface BulkAdvisory {
  id: string;
  url: string;
  title: string;
  severity: "low" | "moderate" | "high" | "critical";
  vulnerable_versions: string;
  cwe: string[];
}

const SEVERITY = { LOW: "low", MEDIUM: "moderate", HIGH: "high", CRITICAL: "critical" } as const;
const semverOpt = { includePrerelease: true, loose: true };

/** A span of versions an OSV range affects: from `from` (inclusive; undefined: every version before) up to `to` (undefined: no end). */
interface Span {
  from: string | undefined;
  to: string | undefined;
  toInclusive: boolean;
}

/** The spans and listed versions of OSV `affected` entries that npm's semver can read (SEMVER and ECOSYSTEM ranges; GIT ranges name commits). */
function osvSpans(affected: readonly OsvAffected[]): { spans: Span[]; versions: string[] } {
  const spans: Span[] = [];
  const versions: string[] = [];
  for (const entry of affected) {
    for (const v of entry.versions ?? []) if (semver.valid(v, semverOpt)) versions.push(v);
    for (const range of entry.ranges ?? []) {
      if (range.type !== "SEMVER" && range.type !== "ECOSYSTEM") continue;
      const events = (range.events ?? []).flatMap((e) => {
        const [kind, at] = Object.entries(e)[0] ?? [];
        return kind && typeof at === "string" && (kind === "introduced" || kind === "fixed" || kind === "last_affected") && (at === "0" || semver.valid(at, semverOpt)) ? [{ kind, at }] : [];
      });
      events.sort((x, y) => (x.at === "0" ? (y.at === "0" ? 0 : -1) : y.at === "0" ? 1 : semver.compare(x.at, y.at, semverOpt)));
      let open: { from: string | undefined } | undefined;
      for (const e of events) {
        if (e.kind === "introduced") open ??= { from: e.at === "0" ? undefined : e.at };
        else if (open) {
          spans.push({ from: open.from, to: e.at, toInclusive: e.kind === "last_affected" });
          open = undefined;
        }
      }
      if (open) spans.push({ from: open.from, to: undefined, toInclusive: false });
    }
  }
  return { spans, versions };
}

const valid = (range: string): string | undefined => (range !== "" && semver.validRange(range, semverOpt) !== null ? range : undefined);

/**
 * An OSV `affected` entry's ranges as one npm semver range: each SEMVER or ECOSYSTEM range's
 * events (sorted, `introduced` "0" first) become `>=a <b` (fixed) or `>=a <=b` (last_affected)
 * or `>=a` (still open), its `versions` exact versions, all joined with `||`. Undefined when the
 * entry has no range npm can read (GIT ranges, versions that are not semver).
 */
export function semverRangeOf(affected: readonly OsvAffected[]): string | undefined {
  const { spans, versions } = osvSpans(affected);
  const parts = [...versions, ...spans.map((x) => [x.from === undefined ? ">=0.0.0-0" : `>=${x.from}`, x.to === undefined ? "" : `${x.toInclusive ? "<=" : "<"}${x.to}`].filter(Boolean).join(" "))];
  return valid(parts.join(" || "));
}

/**
 * The versions outside what the record affects, as a semver range (`>=1.1.0`; `<1.0.0 || >=1.2.0`):
 * what pnpm writes as the override that fixes it. `<0.0.0` (npm's word for "no fix") when every
 * version from some point on is affected; undefined when the record is not spans npm can order
 * without overlap (listed versions, overlapping ranges): no fix is suggested then.
 */
export function patchedRangeOf(affected: readonly OsvAffected[]): string | undefined {
  const { spans, versions } = osvSpans(affected);
  if (versions.length > 0 || spans.length === 0) return undefined;
  const cmp = (a: string | undefined, b: string | undefined) => (a === b ? 0 : a === undefined ? -1 : b === undefined ? 1 : semver.compare(a, b, semverOpt));
  spans.sort((a, b) => cmp(a.from, b.from));
  const parts: string[] = [];
  let after: Span | undefined;
  for (const x of spans) {
    if (after && (after.to === undefined || cmp(x.from, after.to) < 0 || (after.toInclusive && cmp(x.from, after.to) === 0))) return undefined;
    const lower = after ? `${after.toInclusive ? ">" : ">="}${after.to}` : "";
    if (x.from !== undefined) parts.push([lower, `<${x.from}`].filter(Boolean).join(" "));
    after = x;
  }
  if (after!.to === undefined) return parts.length > 0 ? valid(parts.join(" || ")) : "<0.0.0";
  parts.push(`${after!.toInclusive ? ">" : ">="}${after!.to}`);
  return valid(parts.join(" || "));
}

/**
 * A hit as npm reads it. The range is checked against the gate's own reading of the record for
 * every version asked about; where the two differ (a record npm's ranges cannot say), the range
 * is the affected versions asked about, listed, so npm never reports a version the gate passes
 * or passes one it would report.
 */
export function bulkAdvisory(name: string, asked: readonly string[], hit: AuditHit): BulkAdvisory {
  const a = hit.advisory;
  const affected = new Set(hit.versions);
  let range = semverRangeOf(hit.affected);
  if (range === undefined || asked.some((v) => semver.satisfies(v, range!, semverOpt) !== affected.has(v))) range = hit.versions.join(" || ");
  const summary = a.summary.trim() === "" ? a.id : a.summary.trim();
  return {
    id: a.id,
    url: `https://osv.dev/vulnerability/${encodeURIComponent(a.id)}`,
    title: a.kind === "malware" ? `Malware in ${name}: ${summary}` : summary,
    severity: a.kind === "malware" ? "critical" : SEVERITY[a.level ?? "LOW"],
    vulnerable_versions: range,
    cwe: [],
  };
}

/** An audit's body as JSON, gzipped (as npm sends it) or plain. */
async function decodeAuditBody(body: Buffer, encoding: string | string[] | undefined, what: string): Promise<unknown> {
  let raw = body;
  const enc = (Array.isArray(encoding) ? encoding.join(",") : (encoding ?? "")).trim().toLowerCase();
  if (enc === "gzip" || enc === "x-gzip") {
    try {
      raw = await unpack(body, { maxOutputLength: MAX_AUDIT_UNPACKED_BYTES });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw new ServiceError("payload_too_large", `an audit may be at most ${MAX_AUDIT_UNPACKED_BYTES} bytes once unpacked`);
      throw invalid("body", "the body is not valid gzip (Content-Encoding: gzip)");
    }
  } else if (enc !== "" && enc !== "identity") {
    throw new ServiceError("unsupported_media_type", `Content-Encoding ${enc} is not read here: send the body plain or gzipped`);
  }
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw invalid("body", `the body is not valid JSON: an audit sends ${what}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The packages and versions of a bulk audit's body (`{"<name>": ["<version>", …]}`), gzipped or not. */
export async function readAuditRequest(body: Buffer, encoding: string | string[] | undefined): Promise<Map<string, string[]>> {
  const what = '{"<package>": ["<version>", …]}';
  const parsed = await decodeAuditBody(body, encoding, what);
  if (!isObject(parsed)) throw invalid("body", `an audit sends a JSON object: ${what}`);
  const entries = Object.entries(parsed);
  if (entries.length > MAX_PACKAGES) throw invalid("body", `an audit may name at most ${MAX_PACKAGES} packages`);
  const out = new Map<string, string[]>();
  for (const [name, versions] of entries) {
    if (!Array.isArray(versions) || !versions.every((v) => typeof v === "string")) throw invalid("body", `the versions of ${name.slice(0, 214)} are not a list of strings`);
    if (versions.length > MAX_VERSIONS) throw invalid("body", `an audit may name at most ${MAX_VERSIONS} versions of one package (${name.slice(0, 214)})`);
    if (name === "" || name.length > 214) throw invalid("body", `"${name.slice(0, 214)}" is not an npm package name`);
    out.set(name, versions as string[]);
  }
  return out;
}

/** The packages of a dependency tree (npm 6's and pnpm's audit), each version with the paths that lead to it (`a>b>c`), a bounded few. */
export interface AuditTree {
  packages: Map<string, Map<string, string[]>>;
  /** How many dependencies the tree holds. */
  dependencies: number;
}

const MAX_PATHS = 20;

/**
 * The tree npm 6, yarn 1 and pnpm send to `/-/npm/v1/security/audits[/quick]`:
 * `{"dependencies": {"<name>": {"version", "dependencies": {…}}}}`, walked without recursion.
 */
export async function readAuditTree(body: Buffer, encoding: string | string[] | undefined): Promise<AuditTree> {
  const what = '{"dependencies": {"<package>": {"version": "<version>", "dependencies": {…}}}}';
  const parsed = await decodeAuditBody(body, encoding, what);
  if (!isObject(parsed) || (parsed.dependencies !== undefined && !isObject(parsed.dependencies))) throw invalid("body", `an audit sends a dependency tree: ${what}`);
  const packages = new Map<string, Map<string, string[]>>();
  let dependencies = 0;
  const stack: { deps: Record<string, unknown>; path: string }[] = [{ deps: (parsed.dependencies as Record<string, unknown> | undefined) ?? {}, path: "" }];
  while (stack.length > 0) {
    const { deps, path } = stack.pop()!;
    for (const [name, node] of Object.entries(deps)) {
      if (!isObject(node) || typeof node.version !== "string" || (node.dependencies !== undefined && !isObject(node.dependencies))) throw invalid("body", `the dependency ${name.slice(0, 214)} is not {"version": "<version>", "dependencies": {…}}`);
      if (++dependencies > MAX_PACKAGES) throw invalid("body", `an audit may name at most ${MAX_PACKAGES} dependencies`);
      const at = path === "" ? name : `${path}>${name}`;
      let versions = packages.get(name);
      if (!versions) packages.set(name, (versions = new Map()));
      const paths = versions.get(node.version) ?? [];
      if (paths.length < MAX_PATHS) paths.push(at);
      versions.set(node.version, paths);
      if (node.dependencies) stack.push({ deps: node.dependencies as Record<string, unknown>, path: at });
    }
  }
  return { packages, dependencies };
}

/** npm's bulk advisory answer: the packages some advisory affects, each with its advisories. */
export async function bulkAudit(audit: AdvisoryAudit, packages: ReadonlyMap<string, readonly string[]>): Promise<Record<string, BulkAdvisory[]>> {
  const hits = await audit("npm", packages);
  // Own properties whatever the names (`__proto__` included).
  return Object.fromEntries([...hits].map(([name, list]) => [name, list.map((h) => bulkAdvisory(name, packages.get(name) ?? [], h))]));
}

/** One advisory as npm 6's audit answered it (what pnpm and yarn 1 read). */
export interface TreeAdvisory {
  id: string;
  github_advisory_id: string | null;
  title: string;
  module_name: string;
  severity: BulkAdvisory["severity"];
  url: string;
  vulnerable_versions: string;
  patched_versions: string;
  cves: string[];
  cwe: string[];
  overview: string;
  recommendation: string;
  findings: { version: string; paths: string[] }[];
}

/** npm 6's audit answer of a dependency tree (`/-/npm/v1/security/audits` and `…/quick`): its advisories, keyed by id, and the counts by severity. */
export async function treeAudit(audit: AdvisoryAudit, tree: AuditTree): Promise<{ actions: []; advisories: Record<string, TreeAdvisory>; muted: []; metadata: { vulnerabilities: Record<"info" | BulkAdvisory["severity"], number>; dependencies: number; devDependencies: number; optionalDependencies: number; totalDependencies: number } }> {
  const asked = new Map([...tree.packages].map(([name, versions]) => [name, [...versions.keys()]]));
  const hits = await audit("npm", asked);
  const advisories = new Map<string, TreeAdvisory>();
  const vulnerabilities = { info: 0, low: 0, moderate: 0, high: 0, critical: 0 };
  for (const [name, list] of hits) {
    for (const h of list) {
      const b = bulkAdvisory(name, asked.get(name) ?? [], h);
      const patched = patchedRangeOf(h.affected);
      const key = advisories.has(b.id) ? `${b.id} ${name}` : b.id;
      const versions = tree.packages.get(name)!;
      advisories.set(key, {
        id: b.id,
        github_advisory_id: b.id.startsWith("GHSA-") ? b.id : null,
        title: b.title,
        module_name: name,
        severity: b.severity,
        url: b.url,
        vulnerable_versions: b.vulnerable_versions,
        patched_versions: patched ?? "<0.0.0",
        cves: [],
        cwe: [],
        overview: h.advisory.summary,
        recommendation: patched && patched !== "<0.0.0" ? `Upgrade to a version in ${patched}` : "No fixed version is known",
        findings: h.versions.map((version) => ({ version, paths: versions.get(version) ?? [] })),
      });
      vulnerabilities[b.severity] += h.versions.reduce((n, v) => n + (versions.get(v)?.length ?? 0), 0);
    }
  }
  return {
    actions: [],
    advisories: Object.fromEntries(advisories),
    muted: [],
    metadata: { vulnerabilities, dependencies: tree.dependencies, devDependencies: 0, optionalDependencies: 0, totalDependencies: tree.dependencies },
  };
}
