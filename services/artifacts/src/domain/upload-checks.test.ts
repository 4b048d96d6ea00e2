import { describe, expect, it } from "vitest";
import { digestCheck, parseDeclaredDigests, parsePreconditions } from "./upload-checks.js";

describe("upload checks", () => {
  it("reads the checksum headers Artifactory and Nexus clients send, and refuses a malformed one before the body", () => {
    const md5 = "5d41402abc4b2a76b9719d911017c592";
    const d = parseDeclaredDigests({ "x-checksum-sha1": "AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D", "content-md5": Buffer.from(md5, "hex").toString("base64"), "x-checksum-md5": md5 });
    expect(d.sha1).toEqual([{ hex: "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d", header: "x-checksum-sha1" }]);
    expect(d.md5).toEqual([
      { hex: md5, header: "x-checksum-md5" },
      { hex: md5, header: "content-md5" },
    ]);
    expect(() => parseDeclaredDigests({ "x-checksum-sha256": "abc" })).toThrow(expect.objectContaining({ status: 400, field: "x-checksum-sha256" }));
    expect(() => parseDeclaredDigests({ "content-md5": md5 })).toThrow(expect.objectContaining({ status: 400, field: "content-md5" }));
  });

  it("reads If-Match and If-None-Match as * or a list of tags, weak marker dropped", () => {
    expect(parsePreconditions({ "if-none-match": "*" })).toEqual({ ifMatch: undefined, ifNoneMatch: "*" });
    expect(parsePreconditions({ "if-match": 'W/"a-b", "c"' })).toEqual({ ifMatch: ['"a-b"', '"c"'], ifNoneMatch: undefined });
    expect(parsePreconditions({})).toEqual({ ifMatch: undefined, ifNoneMatch: undefined });
  });

  it("checks a declared BLAKE2b-256 (PyPI's blake2_256_digest) against the bytes that passed, not a cut of BLAKE2b-512", () => {
    // hashlib.blake2b(b"abc", digest_size=32).hexdigest()
    const abc = "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319";
    const through = (declared: string) => {
      const check = digestCheck({ blake2_256: [{ hex: declared, header: "blake2_256_digest" }] });
      for (const t of check.through) t.write(Buffer.from("abc"));
      return () => check.verify("0".repeat(64));
    };
    expect(through(abc)).not.toThrow();
    const cut = "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"; // BLAKE2b-512("abc") cut to 32 bytes
    expect(through(cut)).toThrow(expect.objectContaining({ status: 400, field: "blake2_256_digest", message: expect.stringContaining(`BLAKE2b-256 ${abc}`) }));
  });
});
