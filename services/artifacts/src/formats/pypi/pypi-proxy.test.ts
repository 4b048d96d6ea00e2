import { describe, expect, it } from "vitest";
import { projectPageHtml, projectPageJson } from "./pypi-index.js";
import { distOfFile, invalidProjectPage, pypiSpec, mergeFileLinks, parseProjectJson, parseProjectPage, proxiedFiles, publishTimes, readProjectPage } from "./pypi-proxy.js";
import { upstreamIndex } from "./pypi-proxy-service.js";

const sha = "A".repeat(64);

describe("pypi proxy", () => {
  it("reads an upstream project page: absolute URLs, sha256 fragments, requires-python and yanked", () => {
    const html = `<!DOCTYPE html><html><body><h1>Links for demo</h1>
<a href="../../packages/demo-1.0.tar.gz#sha256=${sha}" data-requires-python="&gt;=3.8">demo-1.0.tar.gz</a><br/>
<a href='https://files.example/demo-1.1-py3-none-any.whl#md5=00' data-yanked="broken">demo-1.1-py3-none-any.whl</a>
<a href="demo-2.0.tar.gz" data-yanked>demo-2.0.tar.gz</a></body></html>`;
    expect(parseProjectPage(html, "https://pypi.example/simple/demo/")).toEqual([
      { filename: "demo-1.0.tar.gz", url: "https://pypi.example/packages/demo-1.0.tar.gz", sha256: "a".repeat(64), requiresPython: ">=3.8" },
      { filename: "demo-1.1-py3-none-any.whl", url: "https://files.example/demo-1.1-py3-none-any.whl", yanked: "broken" },
      { filename: "demo-2.0.tar.gz", url: "https://pypi.example/simple/demo/demo-2.0.tar.gz", yanked: "" },
    ]);
  });

  it("merges a group's files in member order, the first member winning a filename", () => {
    const a = [{ filename: "x-1.0.tar.gz", from: "a" }];
    const b = [{ filename: "x-1.0.tar.gz", from: "b" }, { filename: "x-2.0.tar.gz", from: "b" }];
    expect(mergeFileLinks([a, b])).toEqual([{ filename: "x-1.0.tar.gz", from: "a" }, { filename: "x-2.0.tar.gz", from: "b" }]);
  });

  it("reads an upstream PEP 691 JSON page with PEP 700's upload times and sizes, and tells it from HTML", () => {
    const json = JSON.stringify({
      meta: { "api-version": "1.1" },
      name: "demo",
      files: [
        { filename: "demo-1.0.tar.gz", url: "https://files.example/p/demo-1.0.tar.gz", hashes: { sha256: sha }, "requires-python": ">=3.8", yanked: false, size: 12, "upload-time": "2026-01-02T03:04:05.000Z" },
        { filename: "demo-1.1-py3-none-any.whl", url: "../../packages/demo/1.1/demo-1.1-py3-none-any.whl", hashes: {}, yanked: "broken" },
        { filename: "demo-2.0.tar.gz", url: "demo-2.0.tar.gz", hashes: { md5: "00" }, yanked: true, "upload-time": "not a time" },
      ],
    });
    const links = [
      { filename: "demo-1.0.tar.gz", url: "https://files.example/p/demo-1.0.tar.gz", sha256: "a".repeat(64), requiresPython: ">=3.8", size: 12, uploaded: new Date("2026-01-02T03:04:05Z") },
      { filename: "demo-1.1-py3-none-any.whl", url: "https://up.example/repository/pypi/packages/demo/1.1/demo-1.1-py3-none-any.whl", yanked: "broken" },
      { filename: "demo-2.0.tar.gz", url: "https://up.example/repository/pypi/simple/demo/demo-2.0.tar.gz", yanked: "" },
    ];
    expect(parseProjectJson(json, "https://up.example/repository/pypi/simple/demo/")).toEqual(links);
    expect(readProjectPage(json, "https://up.example/repository/pypi/simple/demo/")).toEqual(links);
    expect(invalidProjectPage(json)).toBeUndefined();
    expect(invalidProjectPage("<!DOCTYPE html><html><body></body></html>")).toBeUndefined();
    expect(invalidProjectPage('{"projects": []}')).toMatch(/not a PEP 691 project page/);
    expect(invalidProjectPage("Service Unavailable")).toMatch(/neither PEP 691 JSON nor PEP 503 HTML/);
  });

  it("reads the version of a wheel or sdist of the project from its file name, however the name is spelt", () => {
    expect(distOfFile("My_Pkg-1.0.0-py3-none-any.whl", "my-pkg")).toEqual({ name: "My_Pkg", version: "1.0.0" });
    expect(distOfFile("my.pkg-2.0rc1.tar.gz", "my-pkg")).toEqual({ name: "my.pkg", version: "2.0rc1" });
    expect(distOfFile("my-pkg-extra-1.0.zip", "my-pkg-extra")).toEqual({ name: "my-pkg-extra", version: "1.0" });
    expect(distOfFile("my_pkg-1.0-1-cp312-cp312-manylinux_2_17_x86_64.whl", "my-pkg")).toEqual({ name: "my_pkg", version: "1.0" });
    for (const other of ["other-1.0.tar.gz", "my_pkg-1.0-py2.7.egg", "my_pkg-1.0.win32.exe", "my-pkg.tar.gz", "my-pkg-extra-1.0.tar.gz"]) expect(distOfFile(other, "my-pkg"), other).toBeUndefined();
  });

  it("serves an upstream's files in this server's own page: links to its packages/ with the sha256, requires-python and yanked kept, others' files left out", () => {
    const links = parseProjectPage(
      `<a href="https://cdn.example/a/demo-1.0.tar.gz#sha256=${sha}" data-requires-python="&gt;=3.8">demo-1.0.tar.gz</a>
<a href="https://cdn.example/b/Demo-1.1-py3-none-any.whl" data-yanked="broken">Demo-1.1-py3-none-any.whl</a>
<a href="https://cdn.example/c/demo-0.1.win32.exe">demo-0.1.win32.exe</a>`,
      "https://pypi.example/simple/demo/",
    );
    const files = proxiedFiles("demo", links);
    expect(files.map((f) => [f.path, f.link.url])).toEqual([
      ["packages/demo/1.0/demo-1.0.tar.gz", "https://cdn.example/a/demo-1.0.tar.gz"],
      ["packages/demo/1.1/Demo-1.1-py3-none-any.whl", "https://cdn.example/b/Demo-1.1-py3-none-any.whl"],
    ]);
    const html = projectPageHtml("demo", files);
    expect(html).toContain(`<a href="../../packages/demo/1.0/demo-1.0.tar.gz#sha256=${"a".repeat(64)}" data-requires-python="&gt;=3.8">demo-1.0.tar.gz</a>`);
    expect(html).toContain('<a href="../../packages/demo/1.1/Demo-1.1-py3-none-any.whl" data-yanked="broken">Demo-1.1-py3-none-any.whl</a>');
    expect(html).not.toContain("cdn.example");
    const json = JSON.parse(projectPageJson("demo", files)) as { versions: string[]; files: Record<string, unknown>[] };
    expect(json.versions).toEqual(["1.0", "1.1"]);
    expect(json.files[0]).toEqual({ filename: "demo-1.0.tar.gz", url: "../../packages/demo/1.0/demo-1.0.tar.gz", hashes: { sha256: "a".repeat(64) }, "requires-python": ">=3.8", yanked: false });
    expect(json.files[1]).toEqual({ filename: "Demo-1.1-py3-none-any.whl", url: "../../packages/demo/1.1/Demo-1.1-py3-none-any.whl", hashes: {}, yanked: "broken" });
  });

  it("takes a version's publish time from its earliest file with one; unknown when none says", () => {
    const at = (filename: string, uploaded?: string) => ({ filename, url: `https://x/${filename}`, ...(uploaded ? { uploaded: new Date(uploaded) } : {}) });
    const files = proxiedFiles("demo", [at("demo-1.0.tar.gz", "2026-01-03T00:00:00Z"), at("demo-1.0-py3-none-any.whl", "2026-01-02T00:00:00Z"), at("demo-2.0.tar.gz"), at("demo-3.0.tar.gz"), at("demo-3.0-py3-none-any.whl", "2026-02-01T00:00:00Z")]);
    expect(publishTimes(files)).toEqual(new Map([["1.0", new Date("2026-01-02T00:00:00Z")], ["2.0", undefined], ["3.0", new Date("2026-02-01T00:00:00Z")]]));
  });

  it("asks an upstream's simple index under its URL, or at it when the URL is the index itself", () => {
    expect(upstreamIndex("https://pypi.example")).toBe("https://pypi.example/simple/");
    expect(upstreamIndex("https://pypi.example/simple/")).toBe("https://pypi.example/simple/");
    expect(upstreamIndex("http://127.0.0.1:8080/repository/pypi/")).toBe("http://127.0.0.1:8080/repository/pypi/simple/");
  });

  it("reads an import's items: a project in any spelling, or project==version; anything else is a 400 naming packages", () => {
    expect(pypiSpec("My_Pkg")).toEqual({ name: "my-pkg" });
    expect(pypiSpec("my.pkg==1.0rc1")).toEqual({ name: "my-pkg", version: "1.0rc1" });
    for (const bad of ["", "-x", "x==", "x>=1.0", "x==1.0/../2"]) expect(() => pypiSpec(bad), bad).toThrow(/not a PyPI project name/);
  });
});
