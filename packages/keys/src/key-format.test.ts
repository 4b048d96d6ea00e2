import { describe, expect, it } from "vitest";
import { crc32 } from "node:zlib";
import { createHash } from "node:crypto";
import { isTenant, keyId, makeKey, parseKey } from "./key-format.js";

function withChecksum(body: string): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc32(body) >>> 0, 0);
  return body + b.toString("base64url");
}

describe("key format", () => {
  it("mints svck_<tenant>.<43-char secret><6-char CRC32> keys that parse back", () => {
    const key = makeKey("acme");
    expect(key).toMatch(/^svck_acme\.[A-Za-z0-9_-]{49}$/);
    const parsed = parseKey(key);
    expect(parsed).toEqual({ ok: true, key: { tenant: "acme", id: keyId(key) } });
  });

  it("uses the default tenant when none is given", () => {
    expect(makeKey()).toMatch(/^svck_default\./);
  });

  it("computes the checksum as base64url CRC32 of everything before it", () => {
    const key = makeKey("t1");
    const body = key.slice(0, -6);
    expect(withChecksum(body)).toBe(key);
  });

  it("derives the id as the SHA-256 hex of the whole key", () => {
    const key = makeKey();
    expect(keyId(key)).toBe(createHash("sha256").update(key).digest("hex"));
    expect(keyId(key)).toHaveLength(64);
  });

  it("mints a different secret every time", () => {
    expect(makeKey()).not.toBe(makeKey());
  });

  it("refuses a wrong prefix", () => {
    const key = makeKey();
    expect(parseKey("svcx" + key.slice(4))).toEqual({ ok: false, problem: "prefix" });
    expect(parseKey("")).toEqual({ ok: false, problem: "prefix" });
  });

  it("refuses a bad tenant", () => {
    const secret = Buffer.alloc(32, 7).toString("base64url");
    expect(parseKey(withChecksum(`svck_ACME.${secret}`))).toEqual({ ok: false, problem: "tenant" });
    expect(parseKey(withChecksum(`svck_.${secret}`))).toEqual({ ok: false, problem: "tenant" });
    expect(parseKey(withChecksum(`svck_-a.${secret}`))).toEqual({ ok: false, problem: "tenant" });
    expect(parseKey(`svck_default${secret}`)).toEqual({ ok: false, problem: "tenant" });
  });

  it("refuses a wrong length", () => {
    const key = makeKey();
    expect(parseKey(key + "A")).toEqual({ ok: false, problem: "length" });
    expect(parseKey(key.slice(0, -1))).toEqual({ ok: false, problem: "length" });
    const short = Buffer.alloc(16, 1).toString("base64url");
    expect(parseKey(withChecksum(`svck_default.${short}`))).toEqual({ ok: false, problem: "length" });
  });

  it("refuses characters outside base64url", () => {
    const key = makeKey();
    const bad = key.slice(0, -10) + "+" + key.slice(-9);
    expect(parseKey(bad)).toEqual({ ok: false, problem: "alphabet" });
  });

  it("refuses a bad checksum, including a single changed character of the secret", () => {
    const key = makeKey();
    const i = key.indexOf(".") + 5;
    const flipped = key.slice(0, i) + (key[i] === "A" ? "B" : "A") + key.slice(i + 1);
    expect(parseKey(flipped)).toEqual({ ok: false, problem: "checksum" });
    const otherSum = key.slice(0, -6) + (key.endsWith("AAAAAA") ? "BBBBBB" : "AAAAAA");
    expect(parseKey(otherSum)).toEqual({ ok: false, problem: "checksum" });
  });

  it("refuses to mint for an invalid tenant", () => {
    expect(() => makeKey("Not Valid")).toThrow(/not a valid tenant/);
  });

  it("accepts DNS-label tenants only", () => {
    expect(isTenant("default")).toBe(true);
    expect(isTenant("a")).toBe(true);
    expect(isTenant("team-42")).toBe(true);
    expect(isTenant("a".repeat(63))).toBe(true);
    expect(isTenant("a".repeat(64))).toBe(false);
    expect(isTenant("trailing-")).toBe(false);
    expect(isTenant("has.dot")).toBe(false);
    expect(isTenant("has_underscore")).toBe(false);
  });
});
