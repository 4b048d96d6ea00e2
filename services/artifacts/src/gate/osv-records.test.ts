import { describe, expect, it } from "vitest";
import { levelOfVector, parseOsvRecord } from "./osv-records.js";

describe("OSV records as the gate keeps them", () => {
  it("a MAL- record is malware, about its packages (PyPI names normalised)", () => {
    const a = parseOsvRecord({ id: "MAL-2024-1", modified: "2024-01-01T00:00:00Z", summary: "Malicious code in Evil_Pkg", affected: [{ package: { ecosystem: "PyPI", name: "Evil_Pkg" }, versions: ["1.0"] }] });
    expect(a).toMatchObject({ id: "MAL-2024-1", kind: "malware", level: "CRITICAL", packages: ["PyPI:evil-pkg"] });
  });

  it("a vulnerability's level comes from its CVSS vector, else from database_specific.severity", () => {
    const vector = parseOsvRecord({ id: "GHSA-1", severity: [{ type: "CVSS_V3", score: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H" }], database_specific: { severity: "LOW" }, affected: [{ package: { ecosystem: "npm", name: "x" } }] });
    expect(vector).toMatchObject({ kind: "vulnerability", level: "CRITICAL" });
    const word = parseOsvRecord({ id: "GHSA-2", database_specific: { severity: "MODERATE" }, affected: [{ package: { ecosystem: "Maven", name: "org.x:y" } }] });
    expect(word?.level).toBe("MEDIUM");
    expect(parseOsvRecord({ id: "GHSA-3", affected: [{ package: { ecosystem: "npm", name: "x" } }] })?.level).toBeUndefined();
  });

  it("CVSS 2, 3 and 4 vectors are rated; text that is no vector is not", () => {
    expect(levelOfVector("CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N")).toBe("CRITICAL");
    expect(levelOfVector("CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:L/I:L/A:L")).toBe("MEDIUM");
    expect(levelOfVector("AV:N/AC:L/Au:N/C:P/I:P/A:P")).toBe("HIGH");
    expect(levelOfVector("garbage")).toBeUndefined();
  });

  it("withdrawn records, records without an id and records of other ecosystems are left out", () => {
    expect(parseOsvRecord({ id: "GHSA-4", withdrawn: "2024-01-01T00:00:00Z", affected: [{ package: { ecosystem: "npm", name: "x" } }] })).toBeUndefined();
    expect(parseOsvRecord({ affected: [{ package: { ecosystem: "npm", name: "x" } }] })).toBeUndefined();
    expect(parseOsvRecord({ id: "DSA-1", affected: [{ package: { ecosystem: "Debian:11", name: "openssl" } }] })).toBeUndefined();
    expect(parseOsvRecord("not an object")).toBeUndefined();
  });
});
