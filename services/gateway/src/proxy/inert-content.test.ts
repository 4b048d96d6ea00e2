import { describe, expect, it } from "vitest";
import { INERT_CSP, attachment, fileNameOf, inertContentFactory, mustBeSaved } from "./inert-content.js";

describe("inert content", () => {
  it("saves what a browser would render or run, by extension or by type, and lets archives, text and images open", () => {
    for (const name of ["a.html", "a.HTM", "a.xhtml", "a.svg", "a.xml", "a.js", "a.mjs", "a.pdf"]) expect(mustBeSaved(name, "application/octet-stream"), name).toBe(true);
    for (const type of ["text/html; charset=utf-8", "image/svg+xml", "application/xml", "application/javascript", "application/pdf", "application/vnd.pypi.simple.v1+html", "application/octet-stream"]) {
      expect(mustBeSaved("a.bin", type), type).toBe(true);
    }
    expect(mustBeSaved("blob", undefined)).toBe(true);
    for (const [name, type] of [["a.jar", "application/java-archive"], ["a.txt", "text/plain; charset=utf-8"], ["a.json", "application/json"], ["doc", "application/vnd.npm.install-v1+json"], ["a.png", "image/png"], ["a.tar.gz", "application/gzip"]]) {
      expect(mustBeSaved(name!, type), name).toBe(false);
    }
  });

  it("names the file safely, with the exact name beside a lossy one", () => {
    expect(fileNameOf("/repository/r/a/r%C3%A9sum%C3%A9.html?x=/y")).toBe("résumé.html");
    expect(fileNameOf("/repository/r/simple/p/")).toBe("");
    expect(attachment("a-1.0.jar")).toBe('attachment; filename="a-1.0.jar"');
    expect(attachment('x"; filename=evil.exe')).toBe(`attachment; filename="x___filename_evil.exe"; filename*=UTF-8''x%22%3B%20filename%3Devil.exe`);
    expect(attachment("..html")).toBe(`attachment; filename="_html"; filename*=UTF-8''..html`);
    expect(attachment("")).toBe('attachment; filename="download"');
  });

  it("puts its headers in place of the upstream's, and forces no attachment for a separate origin", () => {
    const upstream = ["Content-Type", "text/html", "Content-Security-Policy", "script-src *", "content-disposition", "inline", "ETag", '"1"'];
    expect(inertContentFactory({ separateOrigin: false }).headers("/repository/r/a.html", upstream)).toEqual([
      "Content-Type", "text/html", "ETag", '"1"',
      "content-security-policy", INERT_CSP, "x-content-type-options", "nosniff", "content-disposition", 'attachment; filename="a.html"',
    ]);
    expect(inertContentFactory({ separateOrigin: true }).headers("/repository/r/a.html", upstream)).toEqual(["Content-Type", "text/html", "ETag", '"1"', "content-security-policy", INERT_CSP, "x-content-type-options", "nosniff"]);
  });
});
