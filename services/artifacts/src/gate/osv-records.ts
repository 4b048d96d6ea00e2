import cvss from "ae-cvss-calculator";
import { isEcosystem, packageName, type Ecosystem, type OsvAffected } from "./ecosystems.js";

/** svc.vulnerability-threshold's levels, lowest first (NONE switches the check off, so it is not one). */
export const LEVELS = ["LOW", "MEDIUM", "HIGH", "CRITICAL"] as const;
export type Level = (typeof LEVELS)[number];

/** An OSV record the gate keeps: what it is about and how bad it is. */
export interface Advisory {
  id: string;
  /** OSV's `modified` (RFC 3339): a record changed upstream is checked again. */
  modified: string;
  kind: "malware" | "vulnerability";
  /** The CVSS level (from a vector, else the database's own word); undefined when the record says none. */
  level: Level | undefined;
  summary: string;
  /** The packages it is about, as `ecosystem:name` (names compared as the ecosystem does). */
  packages: string[];
  /** Its `affected` entries of the ecosystems the gate screens. */
  affected: (OsvAffected & { package: { ecosystem: Ecosystem; name: string } })[];
}

export const packageKey = (ecosystem: Ecosystem, name: string): string => `${ecosystem}:${packageName(ecosystem, name)}`;

/** CVSS v3/v4 qualitative rating of a base score (FIRST's table; 0.0 is "None", which no threshold reaches). */
export function levelOfScore(score: number): Level | undefined {
  if (score >= 9) return "CRITICAL";
  if (score >= 7) return "HIGH";
  if (score >= 4) return "MEDIUM";
  if (score > 0) return "LOW";
  return undefined;
}

/** A CVSS vector's level (CVSS 2, 3.0, 3.1 or 4.0, computed by ae-cvss-calculator); undefined when it is not a vector. */
export function levelOfVector(vector: string): Level | undefined {
  try {
    const v = cvss.fromVector(vector) as { calculateScores(): { overall?: number; base?: number } } | null;
    const scores = v?.calculateScores();
    const score = scores?.base ?? scores?.overall;
    return typeof score === "number" && Number.isFinite(score) ? levelOfScore(score) : undefined;
  } catch {
    return undefined;
  }
}

/** GitHub's `database_specific.severity` words (MODERATE is its MEDIUM). */
const WORDS: Record<string, Level> = { LOW: "LOW", MODERATE: "MEDIUM", MEDIUM: "MEDIUM", HIGH: "HIGH", CRITICAL: "CRITICAL" };

const higher = (a: Level | undefined, b: Level | undefined): Level | undefined => (a === undefined ? b : b === undefined ? a : LEVELS.indexOf(a) >= LEVELS.indexOf(b) ? a : b);

const obj = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function levelOf(record: Record<string, unknown>): Level | undefined {
  let level: Level | undefined;
  const severities = [...list(record.severity), ...list(record.affected).flatMap((a) => list(obj(a).severity))];
  for (const s of severities) {
    const score = obj(s).score;
    if (typeof score === "string") level = higher(level, levelOfVector(score));
  }
  if (level !== undefined) return level;
  // No vector the calculator reads: the database's own rating (GitHub's, the one most records carry).
  const word = obj(record.database_specific).severity;
  return typeof word === "string" ? WORDS[word.toUpperCase()] : undefined;
}

/**
 * One OSV record (https://ossf.github.io/osv-schema/) as the gate keeps it; undefined for a
 * record that is not one (no id), withdrawn, or about no package of npm, PyPI or Maven.
 * `MAL-` records (OpenSSF's malicious packages, in osv.dev's exports) are malware; every other
 * is a vulnerability.
 */
export function parseOsvRecord(value: unknown): Advisory | undefined {
  const r = obj(value);
  if (typeof r.id !== "string" || r.id === "" || r.id.length > 200) return undefined;
  if (typeof r.withdrawn === "string" && r.withdrawn !== "") return undefined;
  const affected: Advisory["affected"] = [];
  for (const a of list(r.affected)) {
    const entry = obj(a);
    const pkg = obj(entry.package);
    if (typeof pkg.ecosystem !== "string" || typeof pkg.name !== "string" || !isEcosystem(pkg.ecosystem)) continue;
    affected.push({
      package: { ecosystem: pkg.ecosystem, name: pkg.name },
      ranges: list(entry.ranges).map((x) => ({ type: String(obj(x).type ?? ""), events: list(obj(x).events).map((e) => obj(e) as Record<string, string>) })),
      versions: list(entry.versions).filter((v): v is string => typeof v === "string"),
    });
  }
  if (affected.length === 0) return undefined;
  const malware = r.id.startsWith("MAL-");
  const summary = typeof r.summary === "string" && r.summary !== "" ? r.summary : typeof r.details === "string" ? r.details.split("\n")[0]! : "";
  return {
    id: r.id,
    modified: typeof r.modified === "string" ? r.modified : "",
    kind: malware ? "malware" : "vulnerability",
    level: malware ? "CRITICAL" : levelOf(r),
    summary: summary.slice(0, 500),
    packages: [...new Set(affected.map((a) => packageKey(a.package.ecosystem, a.package.name)))],
    affected,
  };
}
