import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterAll, describe, expect, it } from "vitest";
import { digestFile, digestingStream, storeLayout } from "./store-layout.js";

const root = mkdtempSync(join(tmpdir(), "store-layout-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("storeLayout", () => {
  it("puts content under repositories/<name>/<path> and uploads under tmp/", () => {
    const l = storeLayout("/srv/store");
    expect(l.repositoryDir("libs")).toBe("/srv/store/repositories/libs");
    expect(l.pathOf("libs", ["com", "acme", "a.jar"])).toBe("/srv/store/repositories/libs/com/acme/a.jar");
    expect(l.tmpFile("upload-1")).toBe("/srv/store/tmp/upload-1");
    expect(l.newTmpFile()).toMatch(/^\/srv\/store\/tmp\/[0-9a-f-]{36}$/);
    expect(l.newTmpFile()).not.toBe(l.newTmpFile());
  });
});

describe("content digests", () => {
  const content = Buffer.alloc(600 * 1024, "abc");
  const sha256 = createHash("sha256").update(content).digest("hex");

  it("agree between an upload streamed through and the stored file read back", async () => {
    const meter = digestingStream();
    const chunks: Buffer[] = [];
    await pipeline(Readable.from([content.subarray(0, 1000), content.subarray(1000)]), meter.stream, new Writable({ write: (c: Buffer, _e, cb) => (chunks.push(c), cb()) }));
    expect(Buffer.concat(chunks).equals(content)).toBe(true);
    expect(meter.digest()).toEqual({ size: content.length, sha256 });

    const file = join(root, "stored.bin");
    writeFileSync(file, content);
    expect(await digestFile(file)).toEqual({ size: content.length, sha256 });
  });

  it("of an empty file is the SHA-256 of nothing", async () => {
    const file = join(root, "empty.bin");
    writeFileSync(file, "");
    expect(await digestFile(file)).toEqual({ size: 0, sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" });
  });
});
