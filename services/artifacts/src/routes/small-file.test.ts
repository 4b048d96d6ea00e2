import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import send from "@fastify/send";
import { describe, expect, it } from "vitest";
import { SMALL_FILE_BYTES, readSmallFile } from "./small-file.js";

const root = mkdtempSync(join(tmpdir(), "small-file-"));
const sent = async (name: string) => {
  const r = await send({ method: "GET", headers: {} } as IncomingMessage, `/${name}`, { root, dotfiles: "allow", index: false, cacheControl: false, acceptRanges: true, etag: true, lastModified: true });
  return Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
};

describe("readSmallFile", () => {
  it("answers a small file whole with the headers @fastify/send gives it", async () => {
    for (const [name, content] of [["pkg-1.0.0.tgz", "a tarball"], ["lib.jar", "a jar"], ["meta.json", '{"a":1}'], ["notes.txt", "text"], [".hidden", "x"]] as const) {
      writeFileSync(join(root, name), content);
      const small = readSmallFile(join(root, name), {});
      expect(small?.body.toString(), name).toBe(content);
      expect(small?.headers, name).toEqual(await sent(name));
    }
  });

  it("leaves ranges, conditional requests, folders, missing and larger files to @fastify/send", () => {
    const file = join(root, "plain.bin");
    writeFileSync(file, "bytes");
    for (const h of ["range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since"]) expect(readSmallFile(file, { [h]: "x" }), h).toBeUndefined();
    mkdirSync(join(root, "folder"), { recursive: true });
    expect(readSmallFile(join(root, "folder"), {})).toBeUndefined();
    expect(readSmallFile(join(root, "missing.bin"), {})).toBeUndefined();
    // A FIFO nobody writes to would block a plain open: this one is turned away at once.
    execFileSync("mkfifo", [join(root, "fifo")]);
    expect(readSmallFile(join(root, "fifo"), {})).toBeUndefined();
    const large = join(root, "large.bin");
    writeFileSync(large, Buffer.alloc(SMALL_FILE_BYTES + 1));
    expect(readSmallFile(large, {})).toBeUndefined();
    writeFileSync(large, Buffer.alloc(SMALL_FILE_BYTES));
    expect(readSmallFile(large, {})?.body.length).toBe(SMALL_FILE_BYTES);
  });
});
