// The behaviour every BlobStore backend shares, as a vitest suite a backend's test file runs
// against its own store (filesystem.test.ts; the S3 backend's runs on a real RADOS Gateway).
import { createHash } from "node:crypto";
import { Readable, Transform } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import type { BlobStore } from "./blob-store.js";

export interface ContractStores {
  store: BlobStore;
  /** The same content, read-only. */
  readOnly: BlobStore;
  cleanup(): Promise<void>;
}

export const sha = (s: string | Buffer) => createHash("sha256").update(s).digest("hex");
export const text = async (r: Readable | undefined) => {
  if (!r) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
};

/** Runs `fn` and answers it with how much the process's resident memory grew at most meanwhile. */
export async function peakGrowth<T>(fn: () => Promise<T>): Promise<{ value: T; peak: number }> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = 0;
  const meter = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss - before)), 5);
  try {
    const value = await fn();
    return { value, peak: Math.max(peak, process.memoryUsage().rss - before) };
  } finally {
    clearInterval(meter);
  }
}

/** A stream of `count` copies of `chunk`, made as they are read. */
export function generated(chunk: Buffer, count: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      this.push(sent++ < count ? chunk : null);
    },
  });
}

/** Registers the shared tests in the calling describe; `make` gives an empty store per test. */
export function blobStoreContract(make: () => Promise<ContractStores>): void {
  let s: ContractStores;
  beforeEach(async () => {
    s = await make();
  });
  afterEach(async () => {
    await s?.cleanup();
  });

  it("stores content under its digest and reads it back, nothing staged left", async () => {
    const out = await s.store.put(Readable.from([Buffer.from("hello "), Buffer.from("world")]));
    expect(out).toEqual({ sha256: sha("hello world"), size: 11, created: true });
    expect(await text(await s.store.get(out.sha256))).toBe("hello world");
    expect(await s.store.head(out.sha256)).toMatchObject({ sha256: out.sha256, size: 11 });
    expect(await s.store.listStaged({ limit: 10 })).toEqual([]);
  });

  it("answers byte ranges, inclusive as HTTP counts them", async () => {
    const { sha256 } = await s.store.put(Buffer.from("0123456789"));
    expect(await text(await s.store.get(sha256, { start: 2, end: 4 }))).toBe("234");
    expect(await text(await s.store.get(sha256, { start: 9, end: 9 }))).toBe("9");
    expect(await text(await s.store.get(sha256, { start: 0, end: 9 }))).toBe("0123456789");
  });

  it("answers undefined for a blob it does not have, and for what is not a digest", async () => {
    expect(await s.store.get(sha("absent"))).toBeUndefined();
    expect(await s.store.head(sha("absent"))).toBeUndefined();
    expect(await s.store.get("../../etc/passwd")).toBeUndefined();
    expect(await s.store.delete(sha("absent"))).toBe(false);
  });

  it("commit is a conditional create, idempotent: an existing blob kept with its time moved forward, a deleted one made again", async () => {
    const first = await s.store.put(Buffer.from("same"));
    const before = (await s.store.head(first.sha256))!.modified;
    // Object stores keep whole seconds.
    await sleep(1100);
    const staged = await s.store.stage(Readable.from([Buffer.from("same")]));
    expect(staged).toMatchObject({ sha256: first.sha256, size: 4 });
    expect(await s.store.commit(staged)).toEqual({ created: false });
    expect((await s.store.head(first.sha256))!.modified.getTime()).toBeGreaterThan(before.getTime());
    expect(await text(await s.store.get(first.sha256))).toBe("same");
    // Committing again once the blob was removed makes it again from the staged copy.
    expect(await s.store.delete(first.sha256)).toBe(true);
    expect(await s.store.head(first.sha256)).toBeUndefined();
    expect(await s.store.commit(staged)).toEqual({ created: true });
    await s.store.discard(staged);
    await s.store.discard(staged); // gone already: no error
    expect(await text(await s.store.get(first.sha256))).toBe("same");
    expect(await s.store.listStaged({ limit: 10 })).toEqual([]);
  });

  it("a source that fails or a check that throws leaves nothing staged", async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error("client went away"));
      },
    });
    await expect(s.store.stage(failing)).rejects.toThrow(/went away/);
    const refuse = new Transform({
      transform(_c, _e, cb) {
        cb(new Error("declared digest differs"));
      },
    });
    await expect(s.store.stage(Readable.from([Buffer.from("x")]), { through: [refuse] })).rejects.toThrow(/declared/);
    expect(await s.store.listStaged({ limit: 10 })).toEqual([]);
  });

  it("lists blobs in digest order, page by page", async () => {
    const sizes = new Map<string, number>();
    for (let i = 0; i < 30; i++) sizes.set(sha(`blob ${i}`), (await s.store.put(Buffer.from(`blob ${i}`))).size);
    const digests = [...sizes.keys()].sort();
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await s.store.list({ after, limit: 7 });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(7);
      seen.push(...page.map((b) => b.sha256));
      after = page[page.length - 1]!.sha256;
    }
    expect(seen).toEqual(digests);
    const one = await s.store.list({ limit: 1 });
    expect(one[0]).toMatchObject({ sha256: digests[0], size: sizes.get(digests[0]!) });
    expect(one[0]!.modified).toBeInstanceOf(Date);
  });

  it("lists staged leftovers and deletes them only once they are old enough", async () => {
    const staged = await s.store.stage(Buffer.from("half an upload"));
    const [left] = await s.store.listStaged({ limit: 10 });
    expect(left).toMatchObject({ name: staged.name, size: 14 });
    expect(await s.store.deleteStaged(staged.name, 3_600_000)).toBeUndefined();
    await sleep(1100);
    expect(await s.store.deleteStaged(staged.name, 500)).toBe(14);
    expect(await s.store.listStaged({ limit: 10 })).toEqual([]);
    expect(await s.store.deleteStaged("../blobs", 0)).toBeUndefined();
  });

  it("read-only is enforced by the store itself: every write refuses with 403, reads go on", async () => {
    const { sha256 } = await s.store.put(Buffer.from("kept"));
    const ro = s.readOnly;
    expect(ro.readOnly).toBe(true);
    const refused = async (p: Promise<unknown>) => {
      const err = await p.then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).status).toBe(403);
    };
    await refused(ro.stage(Buffer.from("x")));
    await refused(ro.put(Readable.from([Buffer.from("x")])));
    await refused(ro.commit({ name: "x", sha256, size: 4 }));
    await refused(ro.delete(sha256));
    await refused(ro.deleteStaged("x", 0));
    if (ro.abortUpload) await refused(ro.abortUpload({ key: "x", uploadId: "x", initiated: new Date() }));
    expect(await text(await ro.get(sha256))).toBe("kept");
    expect((await ro.list({ limit: 10 })).map((b) => b.sha256)).toEqual([sha256]);
  });
}
