import { describe, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import { parseArtifactUrl } from "./artifact-path.js";

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
});
