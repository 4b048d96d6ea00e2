import { describe, expect, it } from "vitest";
import { affects, versionRange } from "./ecosystems.js";
import { compareMavenVersions, parseMavenRange } from "./maven-version.js";

const range = (events: Record<string, string>[], type = "ECOSYSTEM") => ({ ranges: [{ type, events }] });

describe("OSV version matching in each ecosystem's order", () => {
  it("an npm SEMVER range covers introduced up to fixed, prereleases ordered as semver orders them", () => {
    const r = range([{ introduced: "0" }, { fixed: "1.2.3" }], "SEMVER");
    expect(affects("npm", "1.2.2", r)).toBe(true);
    expect(affects("npm", "1.2.3-beta.1", r)).toBe(true);
    expect(affects("npm", "1.2.3", r)).toBe(false);
    expect(affects("npm", "2.0.0", r)).toBe(false);
  });

  it("last_affected includes its version, and several introduced/fixed pairs make several ranges", () => {
    expect(affects("npm", "1.4.0", range([{ introduced: "1.0.0" }, { last_affected: "1.4.0" }], "SEMVER"))).toBe(true);
    expect(affects("npm", "1.4.1", range([{ introduced: "1.0.0" }, { last_affected: "1.4.0" }], "SEMVER"))).toBe(false);
    const two = range([{ introduced: "1.0.0" }, { fixed: "1.1.0" }, { introduced: "2.0.0" }, { fixed: "2.0.5" }], "SEMVER");
    expect([affects("npm", "1.0.5", two), affects("npm", "1.5.0", two), affects("npm", "2.0.4", two), affects("npm", "2.0.5", two)]).toEqual([true, false, true, false]);
  });

  it("an explicit versions list matches only those versions", () => {
    expect(affects("npm", "4.17.21", { versions: ["4.17.20", "4.17.21"] })).toBe(true);
    expect(affects("npm", "4.17.22", { versions: ["4.17.20", "4.17.21"] })).toBe(false);
  });

  it("PyPI versions are ordered by PEP 440 (1.0 == 1.0.0, rc before the release, post after it)", () => {
    const r = range([{ introduced: "1.0" }, { fixed: "2.0" }]);
    expect(affects("PyPI", "1.0.0", r)).toBe(true);
    expect(affects("PyPI", "2.0rc1", r)).toBe(true);
    expect(affects("PyPI", "2.0", r)).toBe(false);
    expect(affects("PyPI", "1.9.post1", r)).toBe(true);
    expect(affects("PyPI", "1.0", { versions: ["1.0.0"] })).toBe(true);
  });

  it("Maven versions are ordered as Maven orders them (qualifiers, trailing zeros)", () => {
    expect(compareMavenVersions("1.0", "1.0.0")).toBe(0);
    expect(compareMavenVersions("1.0-alpha-1", "1.0")).toBe(-1);
    expect(compareMavenVersions("1.0-rc1", "1.0-beta2")).toBe(1);
    expect(compareMavenVersions("1.0-SNAPSHOT", "1.0")).toBe(-1);
    expect(compareMavenVersions("1.10", "1.9")).toBe(1);
    expect(compareMavenVersions("1.0-sp1", "1.0")).toBe(1);
    expect(compareMavenVersions("1-ga", "1")).toBe(0);
    const r = range([{ introduced: "2.0-beta9" }, { fixed: "2.15.0" }]);
    expect(affects("Maven", "2.14.1", r)).toBe(true);
    expect(affects("Maven", "2.15.0", r)).toBe(false);
    expect(affects("Maven", "2.0-beta8", r)).toBe(false);
  });

  it("GIT ranges and versions that cannot be ordered match nothing", () => {
    expect(affects("npm", "1.0.0", range([{ introduced: "abc123" }], "GIT"))).toBe(false);
    expect(affects("npm", "not-a-version", range([{ introduced: "0" }, { fixed: "2.0.0" }], "SEMVER"))).toBe(false);
  });
});

describe("deny list ranges in each ecosystem's syntax", () => {
  const test = (eco: Parameters<typeof versionRange>[0], r: string, v: string) => {
    const parsed = versionRange(eco, r);
    if (!parsed.ok) throw new Error(parsed.reason);
    return parsed.test(v);
  };
  it("npm semver ranges", () => {
    expect(test("npm", "^1.2.0", "1.9.0")).toBe(true);
    expect(test("npm", "^1.2.0", "2.0.0")).toBe(false);
    expect(test("npm", "*", "9.9.9")).toBe(true);
    expect(versionRange("npm", "not a range")).toMatchObject({ ok: false, reason: expect.stringContaining("npm semver range") });
  });
  it("PEP 440 specifiers, a bare version meaning exactly it", () => {
    expect(test("PyPI", ">=1.0,<1.4", "1.3.9")).toBe(true);
    expect(test("PyPI", ">=1.0,<1.4", "1.4")).toBe(false);
    expect(test("PyPI", "1.2", "1.2.0")).toBe(true);
    expect(versionRange("PyPI", ">>1")).toMatchObject({ ok: false, reason: expect.stringContaining("PEP 440") });
  });
  it("Maven ranges: brackets, open ends, exact versions and unions", () => {
    expect(test("Maven", "[1.0,2.0)", "1.5")).toBe(true);
    expect(test("Maven", "[1.0,2.0)", "2.0")).toBe(false);
    expect(test("Maven", "(,1.0]", "1.0")).toBe(true);
    expect(test("Maven", "[1.2]", "1.2.0")).toBe(true);
    expect(test("Maven", "(,1.0],[1.2,)", "1.1")).toBe(false);
    expect(test("Maven", "(,1.0],[1.2,)", "3")).toBe(true);
    expect(test("Maven", "1.4", "1.4")).toBe(true);
    expect(parseMavenRange("[2.0,1.0]")).toBeUndefined();
    expect(parseMavenRange("[1.0,2.0")).toBeUndefined();
  });
  it("crates.io requirements as Cargo.toml writes them (comma-separated), a bare version meaning exactly it", () => {
    expect(test("crates.io", ">=1.0, <1.4", "1.3.9")).toBe(true);
    expect(test("crates.io", ">=1.0, <1.4", "1.4.0")).toBe(false);
    expect(test("crates.io", "0.1.1", "0.1.1")).toBe(true);
    expect(test("crates.io", "0.1.1", "0.1.2")).toBe(false);
    expect(versionRange("crates.io", "not a range")).toMatchObject({ ok: false, reason: expect.stringContaining("semver requirement") });
  });
});
