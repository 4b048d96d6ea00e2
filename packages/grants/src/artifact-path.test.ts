import { describe, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import { parseArtifactTarget, parseArtifactUrl } from "./artifact-path.js";

const refused = (url: string) => {
  try {
    parseArtifactUrl(url);
  } catch (err) {
    return err instanceof ServiceError && err.status === 400;
  }
  return false;
};

describe("artifact paths", () => {
  it("reads the repository and decoded segments, ignoring the query", () => {
    expect(parseArtifactUrl("/repository/libs/com/acme/app-1.0.jar?x=1")).toEqual({
      repository: "libs",
      segments: ["com", "acme", "app-1.0.jar"],
      path: "com/acme/app-1.0.jar",
    });
    expect(parseArtifactUrl("/repository/libs/a%20b/%40scope/c%25d").segments).toEqual(["a b", "@scope", "c%d"]);
  });

  it("keeps names with dots that are not . or ..", () => {
    expect(parseArtifactUrl("/repository/r/.npmrc").path).toBe(".npmrc");
    expect(parseArtifactUrl("/repository/r/a/.../b").path).toBe("a/.../b");
    expect(parseArtifactUrl("/repository/r/..a/b..").path).toBe("..a/b..");
  });

  it("reads a scoped npm package name sent as one segment as the two segments it names", () => {
    for (const url of ["/repository/npm/@acme%2futil", "/repository/npm/@acme%2Futil", "/repository/npm/@acme/util"]) {
      expect(parseArtifactUrl(url), url).toEqual({ repository: "npm", segments: ["@acme", "util"], path: "@acme/util" });
    }
    expect(parseArtifactUrl("/repository/npm/-/package/@acme%2futil/dist-tags/next").path).toBe("-/package/@acme/util/dist-tags/next");
    expect(parseArtifactUrl("/repository/npm/@acme%2futil/-/util-1.0.0.tgz").segments).toEqual(["@acme", "util", "-", "util-1.0.0.tgz"]);
  });

  it("refuses everything that could leave the repository or mean two things", () => {
    for (const url of [
      "/repository/r/../x",
      "/repository/r/a/..",
      "/repository/r/%2e%2e/x",
      "/repository/r/%2E%2e/x",
      "/repository/r/.%2E/x",
      "/repository/r/./x",
      "/repository/r/%2e/x",
      "/repository/r//etc/passwd",
      "/repository/r/a//b",
      "/repository/r/a/",
      "/repository/r/",
      "/repository/r",
      "/repository/",
      "/repository/r/a%2fb",
      "/repository/r/a%2Fb",
      "/repository/r/@a%2f..",
      "/repository/r/@a%2f.",
      "/repository/r/@a%2f%2e%2e",
      "/repository/r/@a%2f",
      "/repository/r/@a%2fb%2fc",
      "/repository/r/@%2e%2e%2fx",
      "/repository/r/x@a%2fb",
      "/repository/r/@a%2f%00",
      "/repository/r/@a%2f%5c",
      "/repository/r/a%00b",
      "/repository/r/a%0ab",
      "/repository/r/a\\b",
      "/repository/r/a%5cb",
      "/repository/r/%zz",
      "/repository/r/%",
      "/repository/../r/x",
      "/repository/%2e%2e/x",
      "/repository/bad%20name/x",
      `/repository/r/${"a".repeat(256)}`,
    ]) {
      expect(refused(url), url).toBe(true);
    }
  });

  it("lets a folder through to the formats that serve one (pip's /simple/<project>/, twine's repository URL), refusing the rest as before", () => {
    expect(parseArtifactTarget("/repository/py/simple/")).toEqual({ repository: "py", segments: ["simple"], path: "simple", folder: true });
    expect(parseArtifactTarget("/repository/py/simple/my-pkg/?x=1")).toEqual({ repository: "py", segments: ["simple", "my-pkg"], path: "simple/my-pkg", folder: true });
    for (const url of ["/repository/py", "/repository/py/", "/repository/py?x"]) expect(parseArtifactTarget(url), url).toEqual({ repository: "py", segments: [], path: "", folder: true });
    expect(parseArtifactTarget("/repository/py/a/b.whl").folder).toBe(false);
    const refusedTarget = (url: string) => {
      try {
        parseArtifactTarget(url);
      } catch (err) {
        return err instanceof ServiceError && err.status === 400;
      }
      return false;
    };
    for (const url of ["/repository/py//", "/repository/py/a//", "/repository/py//a/", "/repository/py/../", "/repository/py/%2e%2e/", "/repository/py/a/../", "/repository/py/a%2fb/", "/repository/py/a%5c/", "/repository/../", "/repository/"]) {
      expect(refusedTarget(url), url).toBe(true);
    }
  });
});
