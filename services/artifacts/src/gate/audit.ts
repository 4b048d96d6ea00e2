import { affects, type Ecosystem, type OsvAffected } from "./ecosystems.js";
import type { GateStore, StoredAdvisory } from "./gate-store.js";
import { packageKey } from "./osv-records.js";

/** An advisory that affects some of the versions asked about, with its `affected` entries of that package. */
export interface AuditHit {
  advisory: StoredAdvisory;
  /** The advisory's `affected` entries naming the package (its ranges, in the ecosystem's terms). */
  affected: OsvAffected[];
  /** Of the versions asked about, those it affects (at least one). */
  versions: string[];
}

/**
 * What the advisory data in Postgres says of the versions a client has installed (a client's
 * audit, such as `npm audit`): for each package, the advisories (malware and vulnerabilities of
 * every level: a client's audit has its own level) that affect at least one of the versions
 * named. Read in one query, never from the network.
 */
export function advisoryAuditFactory(store: Pick<GateStore, "advisoriesOfMany">) {
  return async (ecosystem: Ecosystem, packages: ReadonlyMap<string, readonly string[]>): Promise<Map<string, AuditHit[]>> => {
    const out = new Map<string, AuditHit[]>();
    const keys = new Map<string, string>();
    for (const name of packages.keys()) keys.set(name, packageKey(ecosystem, name));
    const found = await store.advisoriesOfMany([...new Set(keys.values())]);
    for (const [name, versions] of packages) {
      const key = keys.get(name)!;
      for (const advisory of found.get(key) ?? []) {
        const affected = advisory.affected.filter((x) => x.package.ecosystem === ecosystem && packageKey(ecosystem, x.package.name) === key);
        const hit = versions.filter((v) => affected.some((x) => affects(ecosystem, v, x)));
        if (hit.length > 0) out.set(name, [...(out.get(name) ?? []), { advisory, affected, versions: hit }]);
      }
    }
    return out;
  };
}
export type AdvisoryAudit = ReturnType<typeof advisoryAuditFactory>;
