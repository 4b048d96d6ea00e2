import { mkdtempSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import send from "@fastify/send";
import { describe, expect, it } from "vitest";
import { contentTypeOf, planAnswer, redirectedAnswer } from "./artifact-answer.js";

const sha = "ab".repeat(32);
const updated = new Date("2024-05-06T07:08:09.123Z");
const row = (path = "docs/range.bin", size = 10) => ({ path, size, sha256: sha, updated });
const etag = `"${sha}"`;

describe("planAnswer", () => {
  it("types a path as @fastify/send did (by its extension)", async () => {
    const root = mkdtempSync(join(tmpdir(), "artifact-answer-"));
    for (const name of ["pkg-1.0.0.tgz", "lib.jar", "meta.json", "notes.txt", ".hidden", "page.html", "noext"]) {
      writeFileSync(join(root, name), "x");
      const r = await send({ method: "GET", headers: {} } as IncomingMessage, `/${name}`, { root, dotfiles: "allow", index: false });
      const theirs = Object.entries(r.headers).find(([k]) => k.toLowerCase() === "content-type")?.[1];
      expect(contentTypeOf(`a/${name}`), name).toBe(theirs === undefined ? undefined : String(theirs));
    }
  });

  it("answers the whole artifact with its digest as a strong ETag and its publish time as Last-Modified", () => {
    expect(planAnswer({}, row())).toEqual({ status: 200, headers: { "accept-ranges": "bytes", "last-modified": updated.toUTCString(), etag, "x-checksum-sha256": row().sha256, "content-type": "application/octet-stream", "content-length": "10" } });
  });

  it("answers 304 to a matching If-None-Match or an If-Modified-Since not before the publish, unless no-cache", () => {
    expect(planAnswer({ "if-none-match": etag }, row()).status).toBe(304);
    expect(planAnswer({ "if-none-match": `"other", W/${etag}` }, row()).status).toBe(304);
    expect(planAnswer({ "if-none-match": "*" }, row()).status).toBe(304);
    expect(planAnswer({ "if-none-match": '"other"' }, row()).status).toBe(200);
    expect(planAnswer({ "if-modified-since": updated.toUTCString() }, row()).status).toBe(304);
    expect(planAnswer({ "if-modified-since": new Date(updated.getTime() - 5000).toUTCString() }, row()).status).toBe(200);
    // If-None-Match wins over If-Modified-Since.
    expect(planAnswer({ "if-none-match": '"other"', "if-modified-since": updated.toUTCString() }, row()).status).toBe(200);
    expect(planAnswer({ "if-none-match": etag, "cache-control": "no-cache" }, row()).status).toBe(200);
  });

  it("refuses with 412 an If-Match naming another version, or an If-Unmodified-Since before the publish", () => {
    expect(() => planAnswer({ "if-match": '"not-the-etag"' }, row())).toThrow(expect.objectContaining({ status: 412 }));
    expect(planAnswer({ "if-match": etag }, row()).status).toBe(200);
    expect(planAnswer({ "if-match": "*" }, row()).status).toBe(200);
    expect(() => planAnswer({ "if-unmodified-since": new Date(updated.getTime() - 5000).toUTCString() }, row())).toThrow(expect.objectContaining({ status: 412 }));
    expect(planAnswer({ "if-unmodified-since": new Date(updated.getTime() + 5000).toUTCString() }, row()).status).toBe(200);
  });

  it("answers one byte range with 206, several or a malformed one whole, an unsatisfiable one with 416", () => {
    expect(planAnswer({ range: "bytes=2-5" }, row())).toMatchObject({ status: 206, range: { start: 2, end: 5 }, headers: { "content-range": "bytes 2-5/10", "content-length": "4" } });
    expect(planAnswer({ range: "bytes=-3" }, row())).toMatchObject({ status: 206, range: { start: 7, end: 9 } });
    expect(planAnswer({ range: "bytes=8-" }, row())).toMatchObject({ status: 206, range: { start: 8, end: 9 } });
    expect(planAnswer({ range: "bytes=0-1,5-6" }, row()).status).toBe(200);
    expect(planAnswer({ range: "lines=1-2" }, row()).status).toBe(200);
    expect(() => planAnswer({ range: "bytes=50-60" }, row())).toThrow(expect.objectContaining({ status: 416, headers: { "content-range": "bytes */10" } }));
  });

  it("honours If-Range: the range only while the artifact is the version named", () => {
    expect(planAnswer({ range: "bytes=2-5", "if-range": etag }, row()).status).toBe(206);
    expect(planAnswer({ range: "bytes=2-5", "if-range": '"other"' }, row()).status).toBe(200);
    expect(planAnswer({ range: "bytes=2-5", "if-range": updated.toUTCString() }, row()).status).toBe(206);
    expect(planAnswer({ range: "bytes=2-5", "if-range": new Date(updated.getTime() - 5000).toUTCString() }, row()).status).toBe(200);
  });
});

describe("redirectedAnswer (svc.storage.s3.redirect)", () => {
  it("gives the object store's answer the server's type, and attachment for what a browser would render or run", () => {
    expect(redirectedAnswer("site/page.html", contentTypeOf("site/page.html"))).toEqual({ contentType: "text/html; charset=utf-8", contentDisposition: 'attachment; filename="page.html"' });
    expect(redirectedAnswer("a/logo.svg", contentTypeOf("a/logo.svg"))).toMatchObject({ contentDisposition: 'attachment; filename="logo.svg"' });
    expect(redirectedAnswer("a/notes.txt", contentTypeOf("a/notes.txt"))).toEqual({ contentType: "text/plain; charset=utf-8" });
    expect(redirectedAnswer("a/app-1.0.jar", contentTypeOf("a/app-1.0.jar"))).toEqual({ contentType: "application/java-archive" });
    // No type known: saved, as the gateway saves an answer without a type.
    expect(redirectedAnswer("a/blob", undefined)).toEqual({ contentType: "application/octet-stream", contentDisposition: 'attachment; filename="blob"' });
    expect(redirectedAnswer("a/ü.html", "text/html")).toEqual({ contentType: "text/html", contentDisposition: `attachment; filename="_.html"; filename*=UTF-8''%C3%BC.html` });
  });
});
