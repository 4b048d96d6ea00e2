import { describe, expect, it } from "vitest";
import { escapePath, goCoordinates, isPseudoVersion, latestOf, modulePathError, parseGoPath, unescapePath, versionError, zipPath } from "./go-module.js";

describe("Go module paths and versions", () => {
  it("case-encodes paths as the go command sends them, and refuses encodings it never sends", () => {
    expect(escapePath("github.com/Azure/azure-SDK")).toBe("github.com/!azure/azure-!s!d!k");
    expect(unescapePath("github.com/!azure/azure-!s!d!k")).toBe("github.com/Azure/azure-SDK");
    expect(unescapePath("github.com/Azure/x")).toBeUndefined();
    expect(unescapePath("github.com/!/x")).toBeUndefined();
    expect(unescapePath("github.com/x!")).toBeUndefined();
  });

  it("checks module paths as module.CheckPath does", () => {
    expect(modulePathError("example.com/lib")).toBeUndefined();
    expect(modulePathError("example.com/lib/v2")).toBeUndefined();
    expect(modulePathError("gopkg.in/yaml.v3")).toBeUndefined();
    expect(modulePathError("lib")).toMatch(/missing dot/);
    expect(modulePathError("Example.com/lib")).toMatch(/first path element/);
    expect(modulePathError("example.com/lib/v1")).toMatch(/version suffix/);
    expect(modulePathError("example.com/lib/v0")).toMatch(/version suffix/);
    expect(modulePathError("example.com/a//b")).toMatch(/double slash/);
    expect(modulePathError("example.com/.hidden")).toMatch(/leading dot/);
    expect(modulePathError("example.com/con")).toMatch(/Windows/);
    expect(modulePathError("example.com/a b")).toMatch(/invalid char/);
    expect(modulePathError("gopkg.in/yaml")).toMatch(/version suffix/);
  });

  it("takes canonical versions whose major version matches the path, +incompatible only without a suffix at v2 and up", () => {
    expect(versionError("example.com/lib", "v1.2.3")).toBeUndefined();
    expect(versionError("example.com/lib", "v0.1.0-rc.1")).toBeUndefined();
    expect(versionError("example.com/lib", "v2.0.0+incompatible")).toBeUndefined();
    expect(versionError("example.com/lib/v2", "v2.1.0")).toBeUndefined();
    expect(versionError("gopkg.in/yaml.v3", "v3.0.1")).toBeUndefined();
    expect(versionError("example.com/lib", "v1.2")).toMatch(/not canonical/);
    expect(versionError("example.com/lib", "1.2.3")).toMatch(/start with v/);
    expect(versionError("example.com/lib", "v1.2.3+build")).toMatch(/not canonical/);
    expect(versionError("example.com/lib", "v01.2.3")).toMatch(/not canonical/);
    expect(versionError("example.com/lib", "v2.0.0")).toMatch(/want v0 or v1/);
    expect(versionError("example.com/lib", "v1.0.0+incompatible")).toMatch(/major versions 2 and up/);
    expect(versionError("example.com/lib/v2", "v3.0.0")).toMatch(/want v2/);
    expect(versionError("example.com/lib/v2", "v2.0.0+incompatible")).toMatch(/not allowed/);
  });

  it("knows pseudo-versions, and picks @latest as the go command would", () => {
    expect(isPseudoVersion("v0.0.0-20191109021931-daa7c04131f5")).toBe(true);
    expect(isPseudoVersion("v1.2.4-0.20191109021931-daa7c04131f5")).toBe(true);
    expect(isPseudoVersion("v1.2.3-rc.1.0.20191109021931-daa7c04131f5")).toBe(true);
    expect(isPseudoVersion("v1.2.3-rc.1")).toBe(false);
    expect(latestOf(["v1.0.0", "v1.10.0", "v1.9.0", "v2.0.0-beta.1"])).toBe("v1.10.0");
    expect(latestOf(["v1.0.0", "v2.0.0+incompatible"])).toBe("v1.0.0");
    expect(latestOf(["v2.0.0+incompatible"])).toBe("v2.0.0+incompatible");
    expect(latestOf(["v1.0.0-alpha", "v1.0.0-beta"])).toBe("v1.0.0-beta");
    expect(latestOf([])).toBeUndefined();
  });

  it("reads the GOPROXY protocol's paths, and names a zip's coordinates", () => {
    expect(parseGoPath("github.com/!azure/x/@v/list")).toEqual({ kind: "list", module: "github.com/Azure/x", escaped: "github.com/!azure/x" });
    expect(parseGoPath("example.com/x/@v/v1.0.0.info")).toMatchObject({ kind: "info", module: "example.com/x", version: "v1.0.0" });
    expect(parseGoPath("example.com/x/@v/v1.0.0-!r!c1.mod")).toMatchObject({ kind: "mod", version: "v1.0.0-RC1" });
    expect(parseGoPath("example.com/x/@latest")).toMatchObject({ kind: "latest", module: "example.com/x" });
    expect(parseGoPath("example.com/x/@v/v1.0.0.tar")).toMatchObject({ kind: "invalid" });
    expect(parseGoPath("sumdb/sum.golang.org/@v/list")).toMatchObject({ kind: "invalid" });
    expect(parseGoPath("example.com/x/go.mod")).toBeUndefined();
    expect(zipPath("example.com/Big", "v1.0.0")).toBe("example.com/!big/@v/v1.0.0.zip");
    expect(goCoordinates("example.com/!big/@v/v1.0.0.zip")).toEqual({ format: "go", name: "example.com/Big", version: "v1.0.0", file: "v1.0.0.zip" });
    expect(goCoordinates("example.com/big/@v/v1.0.0.mod")).toBeUndefined();
  });
});
