import { describe, expect, it } from "vitest";
import { mergeFileLinks, parseProjectPage } from "./pypi-proxy.js";

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
});
