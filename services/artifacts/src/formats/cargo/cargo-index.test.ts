import { describe, expect, it } from "vitest";
import { canonicalName, cargoCoordinates, crateOfIndexPath, cratePath, indexEntry, indexPath, isCrateName, maxVersion, readPublishMetadata } from "./cargo-index.js";

describe("cargo's registry formats", () => {
  it("lays index files out as cargo asks for them, lowercase", () => {
    expect(["a", "ab", "abc", "Serde", "my_crate"].map(indexPath)).toEqual(["1/a", "2/ab", "3/a/abc", "se/rd/serde", "my/_c/my_crate"]);
    expect(crateOfIndexPath(["se", "rd", "serde"])).toBe("serde");
    expect(crateOfIndexPath(["3", "a", "abc"])).toBe("abc");
    expect(crateOfIndexPath(["3", "b", "abc"])).toBeUndefined();
    expect(crateOfIndexPath(["se", "rd", "Serde"])).toBeUndefined();
    expect(crateOfIndexPath(["config.json"])).toBeUndefined();
  });

  it("takes crate names as crates.io does, unique without regard to case, - and _", () => {
    expect(["serde", "my-crate", "My_Crate2", "a"].every(isCrateName)).toBe(true);
    expect(["", "1abc", "-x", "a.b", "a b", "ü", "x".repeat(65)].some(isCrateName)).toBe(false);
    expect(canonicalName("My_Crate")).toBe(canonicalName("my-crate"));
  });

  it("names a stored .crate file's package, and nothing else", () => {
    expect(cargoCoordinates(cratePath("My_Crate", "1.0.0-rc.1+build.5"))).toEqual({ format: "cargo", name: "My_Crate", version: "1.0.0-rc.1+build.5", file: "My_Crate-1.0.0-rc.1+build.5.crate" });
    expect(cargoCoordinates("crates/a/b-1.0.0.crate")).toBeUndefined();
    expect(cargoCoordinates("crates/a/a-1.0.crate")).toBeUndefined();
    expect(cargoCoordinates("se/rd/serde")).toBeUndefined();
  });

  it("makes the index line of a publish: version_req becomes req, a renamed dependency keeps its package, new-syntax features go to features2", () => {
    const meta = readPublishMetadata(
      JSON.stringify({
        name: "Two",
        vers: "0.2.0",
        deps: [
          { name: "one", version_req: "^0.1.0", features: ["x"], optional: true, default_features: false, target: "cfg(unix)", kind: "normal", registry: null, explicit_name_in_toml: "uno" },
          { name: "other", version_req: ">=1", kind: "dev", registry: "https://example.com/index" },
        ],
        features: { default: ["std"], std: [], extra: ["dep:uno"] },
        links: "z",
        rust_version: "1.70",
        description: "two",
        authors: ["someone"],
      }),
    );
    expect(indexEntry(meta, "ab".repeat(32))).toEqual({
      name: "Two",
      vers: "0.2.0",
      deps: [
        { name: "uno", req: "^0.1.0", features: ["x"], optional: true, default_features: false, target: "cfg(unix)", kind: "normal", package: "one" },
        { name: "other", req: ">=1", features: [], optional: false, default_features: true, target: null, kind: "dev", registry: "https://example.com/index" },
      ],
      cksum: "ab".repeat(32),
      features: { default: ["std"], std: [] },
      features2: { extra: ["dep:uno"] },
      yanked: false,
      links: "z",
      v: 2,
      rust_version: "1.70",
    });
  });

  it("refuses publish metadata cargo would not send, naming the field", () => {
    const base = { name: "ok", vers: "1.0.0", deps: [], features: {} };
    expect(() => readPublishMetadata("{")).toThrow(/not valid JSON/);
    expect(() => readPublishMetadata(JSON.stringify({ ...base, name: "not ok" }))).toThrow(/not a valid crate name/);
    expect(() => readPublishMetadata(JSON.stringify({ ...base, vers: "1.0" }))).toThrow(/not a semver version/);
    expect(() => readPublishMetadata(JSON.stringify({ ...base, deps: [{ name: "x" }] }))).toThrow(/deps\[0\]\.version_req/);
    expect(() => readPublishMetadata(JSON.stringify({ ...base, features: { a: [1] } }))).toThrow(/features\.a/);
  });

  it("answers the highest version not yanked as the crate's max_version", () => {
    expect(maxVersion([{ vers: "1.0.0", yanked: false }, { vers: "1.10.0", yanked: false }, { vers: "2.0.0", yanked: true }])).toBe("1.10.0");
    expect(maxVersion([{ vers: "2.0.0", yanked: true }])).toBe("2.0.0");
  });
});
