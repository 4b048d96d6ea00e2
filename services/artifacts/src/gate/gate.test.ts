import { describe, expect, it } from "vitest";
import { matchesOf, reaches, verdictOf, type GateSettings } from "./gate.js";
import type { DenyEntry, StoredAdvisory } from "./gate-store.js";

const settings = (s: Partial<GateSettings> = {}): GateSettings => ({ malwareAction: "BLOCK", vulnerabilityAction: "BLOCK", vulnerabilityThreshold: "HIGH", denyListAction: "BLOCK", ...s });
const advisory = (id: string, kind: StoredAdvisory["kind"], level: StoredAdvisory["level"], versions: string[]): StoredAdvisory => ({ id, kind, level, summary: `${id} summary`, affected: [{ package: { ecosystem: "npm", name: "pkg" }, versions }] });
const deny = (versions: string): DenyEntry => ({ id: "d1", ecosystem: "npm", name: "pkg", versions, reason: "bad build", createdBy: "key:x", created: new Date() });
const verdict = (version: string, advisories: StoredAdvisory[], entries: DenyEntry[], s: GateSettings) => verdictOf({ ecosystem: "npm", name: "pkg", version }, matchesOf("npm", version, advisories, entries, s, "pkg"));

describe("the gate's verdict for a package version", () => {
  it("malware is refused under BLOCK, with the record and the setting named in the reason", () => {
    const v = verdict("1.0.1", [advisory("MAL-1", "malware", "CRITICAL", ["1.0.1"])], [], settings());
    expect(v?.action).toBe("BLOCK");
    expect(v?.reason).toMatch(/^pkg@1\.0\.1 refused by the screening gate: it is malware \(MAL-1: MAL-1 summary\) \(svc\.malware-action=BLOCK\)$/);
    expect(verdict("1.0.0", [advisory("MAL-1", "malware", "CRITICAL", ["1.0.1"])], [], settings())).toBeUndefined();
  });

  it("vulnerabilities count from the threshold up; NONE switches them off; no level counts as LOW", () => {
    const high = [advisory("GHSA-h", "vulnerability", "HIGH", ["1.0.0"])];
    expect(verdict("1.0.0", high, [], settings({ vulnerabilityThreshold: "HIGH" }))?.action).toBe("BLOCK");
    expect(verdict("1.0.0", high, [], settings({ vulnerabilityThreshold: "CRITICAL" }))).toBeUndefined();
    expect(verdict("1.0.0", high, [], settings({ vulnerabilityThreshold: "NONE" }))).toBeUndefined();
    expect(reaches(undefined, "LOW")).toBe(true);
    expect(reaches(undefined, "MEDIUM")).toBe(false);
  });

  it("the strongest action wins, and every match that is not ALLOW is kept for the findings", () => {
    const v = verdict("1.0.0", [advisory("GHSA-h", "vulnerability", "CRITICAL", ["1.0.0"])], [deny("*")], settings({ vulnerabilityAction: "WARN", denyListAction: "HOLD" }));
    expect(v?.action).toBe("HOLD");
    expect(v?.reason).toContain("on the deny list (*: bad build)");
    expect(v?.matches.map((m) => [m.type, m.action])).toEqual([["vulnerability", "WARN"], ["deny-list", "HOLD"]]);
  });

  it("ALLOW does nothing and records nothing", () => {
    expect(verdict("1.0.1", [advisory("MAL-1", "malware", "CRITICAL", ["1.0.1"])], [deny("^1.0.0")], settings({ malwareAction: "ALLOW", denyListAction: "ALLOW" }))).toBeUndefined();
  });

  it("a deny list range applies in the ecosystem's syntax", () => {
    expect(verdict("1.4.0", [], [deny(">=1.0.0 <1.5.0")], settings())?.action).toBe("BLOCK");
    expect(verdict("1.5.0", [], [deny(">=1.0.0 <1.5.0")], settings())).toBeUndefined();
  });
});
