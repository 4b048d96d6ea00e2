import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync, mkdirSync, linkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SHA256_OF_BYTES, type HashedBytes } from "@svc/contracts";
import { filesystemBlobStore, type FilesystemBlobStore } from "./filesystem.js";
import { blobStoreContract, generated, peakGrowth } from "./contract.fixture.js";

const sha = (s: string | Buffer) => createHash("sha256").update(s).digest("hex");
const text = async (r: Readable | undefined) => {
  if (!r) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
};

describe("filesystemBlobStore", () => {
  let root: string;
  let store: FilesystemBlobStore;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "blobs-"));
    store = filesystemBlobStore({ root, readOnly: false });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("stores content under its digest, on the documented layout, and reads it back", async () => {
    const out = await store.put(Readable.from([Buffer.from("hello "), Buffer.from("world")]));
    expect(out).toEqual({ sha256: sha("hello world"), size: 11, created: true });
    expect(existsSync(join(root, "blobs", "sha256", out.sha256.slice(0, 2), out.sha256))).toBe(true);
    expect(await text(await store.get(out.sha256))).toBe("hello world");
    expect(await store.head(out.sha256)).toMatchObject({ sha256: out.sha256, size: 11 });
    // Nothing staged is left behind.
    expect(readdirSync(join(root, "tmp"))).toEqual([]);
  });

  it("takes the digest a source that hashes its own bytes reports (a checked signed body), unless it was read from before or reports other bytes", async () => {
    // A source reporting a digest it did not hash (what a real one never does), to see whose digest the store keeps.
    const reporting = (parts: string[], report: { sha256: string; size: number }) => {
      const r = Readable.from(parts.map((p) => Buffer.from(p)));
      (r as HashedBytes)[SHA256_OF_BYTES] = () => report;
      return r;
    };
    const claimed = "c".repeat(64);
    const taken = await store.stage(reporting(["layer ", "bytes"], { sha256: claimed, size: 11 }));
    expect(taken).toMatchObject({ sha256: claimed, size: 11 });
    await store.discard(taken);
    // Read from already: the store hashes what it writes.
    const read = reporting(["first ", "rest"], { sha256: claimed, size: 10 });
    read.read();
    expect(await store.stage(read)).toMatchObject({ sha256: sha("rest") });
    // Bytes changed on the way (a transform): hashed here too.
    const upper = new Transform({ transform: (c: Buffer, _e, cb) => cb(null, Buffer.from(c.toString().toUpperCase())) });
    expect(await store.stage(reporting(["abc"], { sha256: claimed, size: 3 }), { through: [upper] })).toMatchObject({ sha256: sha("ABC") });
    // A digest of some other count of bytes is refused, never stored under.
    await expect(store.put(reporting(["abc"], { sha256: claimed, size: 4 }))).rejects.toThrow("does not cover");
    expect(await store.head(claimed)).toBeUndefined();
  });

  it("a streamed put of a large body keeps memory flat", async () => {
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const total = 256;
    const { value: out, peak } = await peakGrowth(() => store.put(generated(chunk, total)));
    expect(out.size).toBe(total * chunk.length);
    // 256 MiB went through; what the process grew by is a small part of it.
    expect(peak).toBeLessThan(96 * 1024 * 1024);
  });

  it("init makes its folders, and nothing in read-only mode", async () => {
    const fresh = mkdtempSync(join(tmpdir(), "blobs-init-"));
    try {
      await filesystemBlobStore({ root: fresh, readOnly: true }).init();
      expect(readdirSync(fresh)).toEqual([]);
      await filesystemBlobStore({ root: fresh, readOnly: false }).init();
      expect(readdirSync(fresh).sort()).toEqual(["blobs", "tmp"]);
      expect(readdirSync(join(fresh, "blobs"))).toEqual(["sha256"]);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it("commit is a conditional create: an existing blob is kept and its time moves forward", async () => {
    const first = await store.put(Buffer.from("same"));
    const blob = join(root, "blobs", "sha256", first.sha256.slice(0, 2), first.sha256);
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(blob, old, old);
    const ino = statSync(blob).ino;
    const staged = await store.stage(Readable.from([Buffer.from("same")]));
    expect(await store.commit(staged)).toEqual({ created: false });
    expect(statSync(blob).ino).toBe(ino);
    expect(statSync(blob).mtimeMs).toBeGreaterThan(old.getTime() + 1000);
    // Committing again once the blob was removed makes it again from the staged copy.
    expect(await store.delete(first.sha256)).toBe(true);
    expect(await store.commit(staged)).toEqual({ created: true });
    await store.discard(staged);
    await store.discard(staged); // gone already: no error
    expect(await text(await store.get(first.sha256))).toBe("same");
  });

  it("lists blobs in digest order, page by page, across shard folders", async () => {
    const sizes = new Map<string, number>();
    for (let i = 0; i < 40; i++) sizes.set(sha(`blob ${i}`), (await store.put(Buffer.from(`blob ${i}`))).size);
    const digests = [...sizes.keys()].sort();
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await store.list({ after, limit: 7 });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(7);
      seen.push(...page.map((b) => b.sha256));
      after = page[page.length - 1]!.sha256;
    }
    expect(seen).toEqual(digests);
    const one = await store.list({ limit: 1 });
    expect(one[0]).toMatchObject({ sha256: digests[0], size: sizes.get(digests[0]!) });
    expect(one[0]!.modified).toBeInstanceOf(Date);
    // Whatever else sits under blobs/ is not a blob.
    writeFileSync(join(root, "blobs", "sha256", digests[0]!.slice(0, 2), "notes.txt"), "x");
    expect((await store.list({ limit: 100 })).map((b) => b.sha256)).toEqual(digests);
  });

  it("lists staged leftovers and deletes them only once they are old enough", async () => {
    const staged = await store.stage(Buffer.from("half an upload"));
    const [left] = await store.listStaged({ limit: 10 });
    expect(left).toMatchObject({ name: staged.name, size: 14 });
    expect(await store.deleteStaged(staged.name, 3_600_000)).toBeUndefined();
    const old = new Date(Date.now() - 7_200_000);
    utimesSync(join(root, "tmp", staged.name), old, old);
    expect(await store.deleteStaged(staged.name, 3_600_000)).toBe(14);
    expect(await store.listStaged({ limit: 10 })).toEqual([]);
    expect(await store.deleteStaged("../blobs", 0)).toBeUndefined();
  });

  it("adopts a file of the old layout: linked already, or hashed and linked", async () => {
    mkdirSync(join(root, "repositories", "libs"), { recursive: true });
    const loose = join(root, "repositories", "libs", "loose.txt");
    writeFileSync(loose, "loose");
    expect(await store.adopt(loose)).toMatchObject({ sha256: sha("loose"), size: 5 });
    expect(await text(await store.get(sha("loose")))).toBe("loose");
    const { sha256 } = await store.put(Buffer.from("linked"));
    const linked = join(root, "repositories", "libs", "linked.txt");
    linkSync(join(root, "blobs", "sha256", sha256.slice(0, 2), sha256), linked);
    expect(await store.adopt(linked, sha256)).toMatchObject({ sha256, size: 6 });
    // A wrong guess is read and corrected.
    expect(await store.adopt(loose, sha256)).toMatchObject({ sha256: sha("loose") });
  });

});

describe("filesystemBlobStore: the behaviour every backend shares", () => {
  blobStoreContract(async () => {
    const root = mkdtempSync(join(tmpdir(), "blobs-contract-"));
    return {
      store: filesystemBlobStore({ root, readOnly: false }),
      readOnly: filesystemBlobStore({ root, readOnly: true }),
      cleanup: async () => rmSync(root, { recursive: true, force: true }),
    };
  });
});
