import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import type { AuditHit } from "../../gate/audit.js";
import { bulkAdvisory, patchedRangeOf, readAuditRequest, readAuditTree, semverRangeOf, treeAudit } from "./npm-audit.js";

const hit = (affected: AuditHit["affected"], versions: string[], extra: Partial<AuditHit["advisory"]> = {}): AuditHit => ({
  advisory: { id: "GHSA-xxxx-0001", kind: "vulnerability", level: "MEDIUM", summary: "prototype pollution", affected: [], ...extra },
  affected,
  versions,
});

describe("semverRangeOf", () => {
  it("turns OSV events into npm ranges: fixed, last_affected, open, introduced 0, and listed versions", () => {
    expect(semverRangeOf([{ ranges: [{ type: "SEMVER", events: [{ introduced: "0" }, { fixed: "1.2.3" }] }] }])).toBe(">=0.0.0-0 <1.2.3");
    expect(semverRangeOf([{ ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "2.0.0" }, { last_affected: "2.1.0" }, { introduced: "3.0.0" }] }] }])).toBe(">=2.0.0 <=2.1.0 || >=3.0.0");
    // Events out of order are sorted first, as OSV evaluates them.
    expect(semverRangeOf([{ ranges: [{ type: "SEMVER", events: [{ fixed: "1.5.0" }, { introduced: "1.0.0" }] }] }])).toBe(">=1.0.0 <1.5.0");
    expect(semverRangeOf([{ versions: ["1.0.1", "not-a-version"] }])).toBe("1.0.1");
  });

  it("says nothing for ranges npm cannot read (GIT commits, versions that are not semver)", () => {
    expect(semverRangeOf([{ ranges: [{ type: "GIT", events: [{ introduced: "abc123" }] }] }])).toBeUndefined();
    expect(semverRangeOf([])).toBeUndefined();
  });
});

describe("bulkAdvisory", () => {
  it("answers what npm's calculator reads, with the level as npm names it", () => {
    const a = bulkAdvisory("left-pad", ["1.0.0", "1.3.0"], hit([{ ranges: [{ type: "SEMVER", events: [{ introduced: "0" }, { fixed: "1.3.0" }] }] }], ["1.0.0"]));
    expect(a).toEqual({ id: "GHSA-xxxx-0001", url: "https://osv.dev/vulnerability/GHSA-xxxx-0001", title: "prototype pollution", severity: "moderate", vulnerable_versions: ">=0.0.0-0 <1.3.0", cwe: [] });
  });

  it("names malware critical; a record without a level is low", () => {
    expect(bulkAdvisory("evil", ["1.0.0"], hit([{ versions: ["1.0.0"] }], ["1.0.0"], { id: "MAL-2026-1", kind: "malware", level: undefined, summary: "steals tokens" }))).toMatchObject({ severity: "critical", title: "Malware in evil: steals tokens", vulnerable_versions: "1.0.0" });
    expect(bulkAdvisory("x", ["1.0.0"], hit([{ versions: ["1.0.0"] }], ["1.0.0"], { level: undefined })).severity).toBe("low");
  });

  it("lists the affected versions asked about when the range would disagree with the gate's reading, or there is none", () => {
    // The gate found 1.0.0 affected through a record npm's range cannot say (here: no range at all).
    expect(bulkAdvisory("x", ["1.0.0", "2.0.0"], hit([{ ranges: [{ type: "GIT", events: [{ introduced: "abc" }] }] }], ["1.0.0"])).vulnerable_versions).toBe("1.0.0");
    // A range that would also take in 2.0.0, which the gate did not find affected.
    expect(bulkAdvisory("x", ["1.0.0", "2.0.0"], hit([{ ranges: [{ type: "SEMVER", events: [{ introduced: "0" }] }] }], ["1.0.0"])).vulnerable_versions).toBe("1.0.0");
  });
});

describe("readAuditRequest", () => {
  const body = { lodash: ["4.17.20"], "@scope/pkg": ["1.0.0", "1.0.1"] };

  it("reads the packages and versions, gzipped as npm sends them or plain", async () => {
    const plain = await readAuditRequest(Buffer.from(JSON.stringify(body)), undefined);
    expect([...plain]).toEqual([["lodash", ["4.17.20"]], ["@scope/pkg", ["1.0.0", "1.0.1"]]]);
    expect(await readAuditRequest(gzipSync(JSON.stringify(body)), "gzip")).toEqual(plain);
  });

  it("refuses what is not an audit, saying what one is", async () => {
    await expect(readAuditRequest(Buffer.from("[1]"), undefined)).rejects.toMatchObject({ code: "invalid_input", message: expect.stringContaining("JSON object") });
    await expect(readAuditRequest(Buffer.from("{"), undefined)).rejects.toMatchObject({ code: "invalid_input" });
    await expect(readAuditRequest(Buffer.from(JSON.stringify({ a: "1.0.0" })), undefined)).rejects.toMatchObject({ code: "invalid_input", message: expect.stringContaining("versions of a") });
    await expect(readAuditRequest(Buffer.from("not gzip"), "gzip")).rejects.toMatchObject({ code: "invalid_input", message: expect.stringContaining("gzip") });
    await expect(readAuditRequest(Buffer.from("{}"), "br")).rejects.toMatchObject({ code: "unsupported_media_type" });
  });

  it("keeps a package named __proto__ as a package", async () => {
    const r = await readAuditRequest(Buffer.from('{"__proto__": ["1.0.0"]}'), undefined);
    expect(r.get("__proto__")).toEqual(["1.0.0"]);
  });
});

describe("patchedRangeOf", () => {
  it("is what the record does not affect: what pnpm overrides to", () => {
    expect(patchedRangeOf([{ ranges: [{ type: "SEMVER", events: [{ introduced: "0" }, { fixed: "1.1.0" }] }] }])).toBe(">=1.1.0");
    expect(patchedRangeOf([{ ranges: [{ type: "SEMVER", events: [{ introduced: "1.0.0" }, { fixed: "1.2.0" }, { introduced: "2.0.0" }, { last_affected: "2.1.0" }] }] }])).toBe("<1.0.0 || >=1.2.0 <2.0.0 || >2.1.0");
    // Still open at the top: no fix, in npm's words.
    expect(patchedRangeOf([{ ranges: [{ type: "SEMVER", events: [{ introduced: "0" }] }] }])).toBe("<0.0.0");
    expect(patchedRangeOf([{ ranges: [{ type: "SEMVER", events: [{ introduced: "3.0.0" }] }] }])).toBe("<3.0.0");
  });

  it("suggests none where the record is listed versions or overlapping ranges", () => {
    expect(patchedRangeOf([{ versions: ["1.0.0"] }])).toBeUndefined();
    expect(patchedRangeOf([{ ranges: [{ type: "SEMVER", events: [{ introduced: "1.0.0" }, { fixed: "2.0.0" }] }, { type: "SEMVER", events: [{ introduced: "1.5.0" }, { fixed: "3.0.0" }] }] }])).toBeUndefined();
  });
});

describe("the dependency tree audit (pnpm, yarn 1)", () => {
  const tree = {
    dependencies: {
      ".": { version: "1.0.0", dependencies: { app: { version: "2.0.0", dependencies: { "left-pad": { version: "1.0.0" } } }, "left-pad": { version: "1.0.0" } } },
    },
  };

  it("reads each package's versions with the paths to them", async () => {
    const t = await readAuditTree(Buffer.from(JSON.stringify(tree)), undefined);
    expect(t.dependencies).toBe(4);
    expect(t.packages.get("left-pad")).toEqual(new Map([["1.0.0", [".>left-pad", ".>app>left-pad"]]]));
  });

  it("refuses a tree that is not one", async () => {
    await expect(readAuditTree(Buffer.from(JSON.stringify({ dependencies: { a: { dependencies: {} } } })), undefined)).rejects.toMatchObject({ code: "invalid_input", message: expect.stringContaining("dependency a") });
    await expect(readAuditTree(Buffer.from("[]"), undefined)).rejects.toMatchObject({ code: "invalid_input" });
  });

  it("answers npm 6's report: advisories by id with findings and paths, counts by severity", async () => {
    const t = await readAuditTree(Buffer.from(JSON.stringify(tree)), undefined);
    const affected: AuditHit["affected"] = [{ ranges: [{ type: "SEMVER", events: [{ introduced: "0" }, { fixed: "1.1.0" }] }] }];
    const report = await treeAudit(async (ecosystem, packages) => {
      expect(ecosystem).toBe("npm");
      expect(packages.get("left-pad")).toEqual(["1.0.0"]);
      return new Map([["left-pad", [hit(affected, ["1.0.0"], { id: "GHSA-lp-0001", level: "HIGH" })]]]);
    }, t);
    expect(report.advisories).toEqual({
      "GHSA-lp-0001": expect.objectContaining({ module_name: "left-pad", severity: "high", github_advisory_id: "GHSA-lp-0001", vulnerable_versions: ">=0.0.0-0 <1.1.0", patched_versions: ">=1.1.0", findings: [{ version: "1.0.0", paths: [".>left-pad", ".>app>left-pad"] }] }),
    });
    expect(report.metadata.vulnerabilities).toEqual({ info: 0, low: 0, moderate: 0, high: 2, critical: 0 });
    expect(report.metadata.totalDependencies).toBe(4);
  });
});
