import { describe, expect, it } from "vitest";
import { JSON_TYPE, negotiate, normalizeProject, projectOfFile, projectPageHtml, projectPageJson, pypiCoordinates, sameVersion, versionOfWheel } from "./pypi-index.js";

const file = { filename: "My_Pkg-1.0-py3-none-any.whl", project: "my-pkg", displayName: "My_Pkg", version: "1.0", path: "packages/my-pkg/1.0/My_Pkg-1.0-py3-none-any.whl", sha256: "ab".repeat(32), size: 10, requiresPython: '>=3.8,<"4"', yanked: null, uploaded: new Date(0) };

describe("the PyPI index", () => {
  it("normalises names as PEP 503 does", () => {
    for (const name of ["My_Pkg", "my.pkg", "MY--pkg", "my-_.pkg"]) expect(normalizeProject(name), name).toBe("my-pkg");
  });

  it("reads the project a wheel or sdist file name belongs to, and nothing from other names", () => {
    expect(projectOfFile("My_Pkg-1.0-py3-none-any.whl", "1.0")).toBe("my-pkg");
    expect(projectOfFile("my.pkg-2.0rc1.tar.gz", "2.0rc1")).toBe("my-pkg");
    expect(projectOfFile("my-pkg-1.0.tar.gz", "1.1")).toBeUndefined();
    for (const bad of ["x-1.0.exe", "../x-1.0.tar.gz", "x/y-1.0.tar.gz", "x-1.0.whl", ".x-1.0.tar.gz"]) expect(projectOfFile(bad, "1.0"), bad).toBeUndefined();
  });

  it("reads a wheel's version from its file name, and compares versions as PEP 440 does", () => {
    expect(versionOfWheel("proj_a-9.9-py3-none-any.whl")).toBe("9.9");
    expect(versionOfWheel("proj_a-1.0rc1-1-cp312-cp312-manylinux_2_17_x86_64.whl")).toBe("1.0rc1");
    expect(versionOfWheel("proj-a-1.0.tar.gz")).toBeUndefined();
    for (const [a, b] of [["1.2", "1.2.0"], ["1.0-RC1", "1.0rc1"], ["1.0-1", "1.0.post1"], ["v1.0", "1.0"], ["1.0a", "1.0a0"], ["0!1.01", "1.1"], ["1.0.dev", "1.0.dev0"], ["1.0+Local.01", "1.0+local-1"], ["1.0-preview2", "1.0rc2"]]) {
      expect(sameVersion(a!, b!), `${a} ${b}`).toBe(true);
    }
    for (const [a, b] of [["1.2", "9.9"], ["1.2", "1.2.1"], ["1.0", "1.0rc1"], ["1.0", "1.0.post0"], ["1.0", "1.0+local"], ["1!1.0", "1.0"], ["1.0a1", "1.0b1"], ["custom-1", "custom-2"]]) {
      expect(sameVersion(a!, b!), `${a} ${b}`).toBe(false);
    }
    // A version PEP 440 does not read is only itself, with `-` as a wheel's file name writes it.
    expect(sameVersion("2013b-custom", "2013b_custom")).toBe(true);
  });

  it("answers JSON only to a client that weighs it highest", () => {
    expect(negotiate("application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01")).toBe(JSON_TYPE);
    expect(negotiate("text/html, application/vnd.pypi.simple.v1+json; q=0.5")).toBe("text/html");
    expect(negotiate(undefined)).toBe("text/html");
  });

  it("escapes data-requires-python and marks yanked files in both forms", () => {
    const html = projectPageHtml("my-pkg", [{ ...file, yanked: "bad <build>" }]);
    expect(html).toContain(`href="../../packages/my-pkg/1.0/My_Pkg-1.0-py3-none-any.whl#sha256=${file.sha256}"`);
    expect(html).toContain('data-requires-python="&gt;=3.8,&lt;&quot;4&quot;"');
    expect(html).toContain('data-yanked="bad &lt;build&gt;"');
    const json = JSON.parse(projectPageJson("my-pkg", [file, { ...file, filename: "b", yanked: "" }])) as { files: { yanked: unknown }[] };
    expect(json.files.map((f) => f.yanked)).toEqual([false, true]);
  });

  it("gives a file's event its coordinates", () => {
    expect(pypiCoordinates(file.path)).toEqual({ format: "pypi", name: "my-pkg", version: "1.0", file: file.filename });
    expect(pypiCoordinates("simple/my-pkg")).toBeUndefined();
  });
});
