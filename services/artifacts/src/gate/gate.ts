import type { PackageCoordinates } from "@svc/contracts";
import { affects, packageName, versionRange, type Ecosystem } from "./ecosystems.js";
import { LEVELS, packageKey, type Level } from "./osv-records.js";
import type { DenyEntry, GateStore, NewFinding, StoredAdvisory } from "./gate-store.js";

export type GateAction = "BLOCK" | "HOLD" | "WARN" | "ALLOW";
export type Threshold = Level | "NONE";

/**
 * The gate's settings as they are now: read on every check through one function, so a value
 * changed at run time (PUT /api/settings/<name>) applies to the next publish.
 */
export interface GateSettings {
  malwareAction: GateAction;
  vulnerabilityAction: GateAction;
  vulnerabilityThreshold: Threshold;
  denyListAction: GateAction;
}

/** One reason a version matched, with the action its setting names. */
export interface Match {
  type: "malware" | "vulnerability" | "deny-list";
  level: Level | null;
  /** The OSV id, or `deny-list:<entry id>`. */
  advisory: string;
  summary: string;
  action: GateAction;
}

/** What the gate decided for a package version: the strongest action of its matches, and why. */
export interface Verdict {
  action: Exclude<GateAction, "ALLOW">;
  reason: string;
  /** The matches to record as findings (those whose action is not ALLOW). */
  matches: Match[];
  package: { ecosystem: Ecosystem; name: string; version: string };
}

const STRENGTH: Record<GateAction, number> = { ALLOW: 0, WARN: 1, HOLD: 2, BLOCK: 3 };
const SETTING: Record<Match["type"], string> = { malware: "svc.malware-action", vulnerability: "svc.vulnerability-action", "deny-list": "svc.deny-list-action" };

/** Whether a vulnerability of `level` reaches the threshold; one the record gives no level counts as LOW. */
export const reaches = (level: Level | undefined, threshold: Threshold): boolean => threshold !== "NONE" && LEVELS.indexOf(level ?? "LOW") >= LEVELS.indexOf(threshold);

const describe = (m: Match): string =>
  m.type === "malware" ? `malware (${m.advisory}: ${m.summary})` : m.type === "vulnerability" ? `a ${m.level ?? "LOW"} vulnerability (${m.advisory}: ${m.summary})` : `on the deny list (${m.summary})`;

/**
 * The matches of a version against the advisories of its package and the deny list entries of
 * its name, with the actions the settings name; a pure function of its inputs.
 */
export function matchesOf(ecosystem: Ecosystem, version: string, advisories: readonly StoredAdvisory[], deny: readonly DenyEntry[], s: GateSettings, name: string): Match[] {
  const out: Match[] = [];
  const key = packageKey(ecosystem, name);
  for (const a of advisories) {
    const hit = a.affected.some((x) => x.package.ecosystem === ecosystem && packageKey(ecosystem, x.package.name) === key && affects(ecosystem, version, x));
    if (!hit) continue;
    if (a.kind === "malware") out.push({ type: "malware", level: "CRITICAL", advisory: a.id, summary: a.summary, action: s.malwareAction });
    else if (reaches(a.level, s.vulnerabilityThreshold)) out.push({ type: "vulnerability", level: a.level ?? null, advisory: a.id, summary: a.summary, action: s.vulnerabilityAction });
  }
  for (const d of deny) {
    const r = versionRange(ecosystem, d.versions);
    if (r.ok && r.test(version)) out.push({ type: "deny-list", level: null, advisory: `deny-list:${d.id}`, summary: `${d.versions === "" ? "*" : d.versions}: ${d.reason}`, action: s.denyListAction });
  }
  return out;
}

/** The verdict of a set of matches: undefined when every action is ALLOW (nothing to do or record). */
export function verdictOf(pkg: Verdict["package"], matches: readonly Match[]): Verdict | undefined {
  const acted = matches.filter((m) => m.action !== "ALLOW");
  if (acted.length === 0) return undefined;
  const strongest = acted.reduce((a, b) => (STRENGTH[b.action] > STRENGTH[a.action] ? b : a));
  const action = strongest.action as Verdict["action"];
  const why = acted.filter((m) => m.action === action);
  const verb = action === "BLOCK" ? "refused" : action === "HOLD" ? "held" : "stored with a warning";
  const reason = `${pkg.name}@${pkg.version} ${verb} by the screening gate: it is ${why.map(describe).join("; ")} (${[...new Set(why.map((m) => `${SETTING[m.type]}=${action}`))].join(", ")})`;
  return { action, reason: reason.slice(0, 1000), matches: acted, package: pkg };
}

export interface GateDeps {
  store: Pick<GateStore, "advisoriesOf" | "denyEntriesOf">;
  settings: () => GateSettings;
  /** The OSV ecosystem of a repository's format (Format.ecosystem); undefined: not screened (raw). */
  ecosystemOf: (repository: string) => Ecosystem | undefined;
  coordinates: (repository: string, path: string) => PackageCoordinates | undefined;
}

/**
 * The screening gate: the verdict for a file a repository is about to store, from the advisory
 * data and the deny list in Postgres (never fetched on the request path).
 */
export function gateFactory(deps: GateDeps) {
  const screen = async (repository: string, path: string): Promise<Verdict | undefined> => {
    const ecosystem = deps.ecosystemOf(repository);
    if (!ecosystem) return undefined;
    const c = deps.coordinates(repository, path);
    if (!c || c.version === "") return undefined;
    const name = packageName(ecosystem, c.name);
    const [advisories, deny] = await Promise.all([deps.store.advisoriesOf(packageKey(ecosystem, name)), deps.store.denyEntriesOf(ecosystem, name)]);
    if (advisories.length === 0 && deny.length === 0) return undefined;
    return verdictOf({ ecosystem, name, version: c.version }, matchesOf(ecosystem, c.version, advisories, deny, deps.settings(), name));
  };
  /**
   * The verdicts on many versions of one package, its advisories and deny entries read once:
   * what a proxy repository leaves out of a package's metadata. Versions nothing matched are absent.
   */
  const screenVersions = async (repository: string, pkg: string, versions: readonly string[]): Promise<Map<string, Verdict>> => {
    const out = new Map<string, Verdict>();
    const ecosystem = deps.ecosystemOf(repository);
    if (!ecosystem) return out;
    const name = packageName(ecosystem, pkg);
    const [advisories, deny] = await Promise.all([deps.store.advisoriesOf(packageKey(ecosystem, name)), deps.store.denyEntriesOf(ecosystem, name)]);
    if (advisories.length === 0 && deny.length === 0) return out;
    const settings = deps.settings();
    for (const version of versions) {
      const verdict = verdictOf({ ecosystem, name, version }, matchesOf(ecosystem, version, advisories, deny, settings, name));
      if (verdict) out.set(version, verdict);
    }
    return out;
  };
  return { screen, screenVersions };
}
export type Gate = ReturnType<typeof gateFactory>;

/** The findings a verdict records about a stored file. */
export function findingsOf(repository: string, path: string, v: Verdict, at: { dataLoaded: Date | null; downloads: number; lastDownloaded: Date | null }): NewFinding[] {
  return v.matches.map((m) => ({ repository, path, ecosystem: v.package.ecosystem, name: v.package.name, version: v.package.version, type: m.type, level: m.level, advisory: m.advisory, summary: m.summary, action: m.action, ...at }));
}
