// The S3 backend of the blob store (packages/blobs/src/s3.ts) against a real RADOS Gateway:
// here rather than in packages/blobs because a package never imports the development tooling
// (layering.test.ts) and the gateway is started by it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { CreateMultipartUploadCommand, S3Client, UploadPartCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlobStoreMisconfigured, BlobStoreUnavailable, partSizeOf, s3BlobStore, withSmallBlobCache, type S3BlobStoreOptions } from "@svc/blobs";
import { blobStoreContract, generated, peakGrowth, sha, text } from "@svc/blobs/contract";
import { startObjectStore, type ObjectStore } from "./object-store.js";

const MiB = 1024 * 1024;
const BUCKET = "svc-blobs";
let os: ObjectStore;
const dataDir = mkdtempSync(join(tmpdir(), "svc-s3-"));

beforeAll(async () => {
  os = await startObjectStore({ dataDir, log: () => {} });
  await os.createBucket(BUCKET);
}, 300_000);
afterAll(async () => {
  await os?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const settings = (more: Partial<S3BlobStoreOptions> = {}): S3BlobStoreOptions => ({
  bucket: BUCKET,
  endpoint: os.endpoint,
  region: os.region,
  pathStyle: true,
  accessKey: os.accessKey,
  secretKey: os.secretKey,
  readOnly: false,
  prefix: `t-${randomUUID()}/`,
  ...more,
});

/** A client of the bucket of its own, for what the tests do behind the store's back. */
const rawClient = () => new S3Client({ endpoint: os.endpoint, region: os.region, forcePathStyle: true, credentials: { accessKeyId: os.accessKey, secretAccessKey: os.secretKey } });

/** A multipart upload begun under the store's staging/ by another client, as a process killed mid-stage leaves one; `part` sends its one part. */
async function beginUpload(raw: S3Client, prefix: string) {
  const key = `${prefix}staging/${randomUUID()}`;
  const { UploadId } = await raw.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }));
  const part = () => raw.send(new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: 1, Body: Buffer.alloc(5 * MiB, 1) }));
  return { key, uploadId: UploadId!, part };
}

describe("s3BlobStore: the behaviour every backend shares", () => {
  blobStoreContract(async () => {
    const o = settings();
    const store = s3BlobStore(o);
    const readOnly = s3BlobStore({ ...o, readOnly: true });
    return {
      store,
      readOnly,
      cleanup: async () => {
        store.close();
        readOnly.close();
      },
    };
  });
});

describe("s3BlobStore", () => {
  it("keeps blobs and staged copies under the prefix, on the documented layout", async () => {
    const o = settings();
    const store = s3BlobStore(o);
    const raw = rawClient();
    try {
      const { sha256 } = await store.put(Buffer.from("layout"));
      const staged = await store.stage(Buffer.from("staged"));
      const { ListObjectsV2Command } = await import("@aws-sdk/client-s3");
      const keys = (await raw.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: o.prefix }))).Contents?.map((c) => c.Key).sort();
      expect(keys).toEqual([`${o.prefix}blobs/sha256/${sha256.slice(0, 2)}/${sha256}`, `${o.prefix}staging/${staged.name}`]);
    } finally {
      raw.destroy();
      store.close();
    }
  });

  it("streams a large object in multipart parts with memory flat, and reads it back whole and in ranges", async () => {
    const store = s3BlobStore(settings({ partSize: 5 * MiB }));
    try {
      const total = 200;
      const { value: out, peak } = await peakGrowth(() => store.put(generated(Buffer.alloc(MiB, 7), total)));
      expect(out.size).toBe(total * MiB);
      // 200 MiB went through in 5 MiB parts; the process grew by a small part of it.
      expect(peak).toBeLessThan(96 * MiB);
      expect(await store.head(out.sha256)).toMatchObject({ size: total * MiB });
      const tail = await text(await store.get(out.sha256, { start: total * MiB - 3, end: total * MiB - 1 }));
      expect(tail).toBe("\x07\x07\x07");
      let read = 0;
      for await (const c of (await store.get(out.sha256))!) read += (c as Buffer).length;
      expect(read).toBe(total * MiB);
    } finally {
      store.close();
    }
  });

  it("grows the part size so the largest objects stay under 10,000 parts; equal parts when asked", () => {
    let covered = 0;
    for (let n = 0; n < 10_000; n++) covered += partSizeOf(n, "growing", 8 * MiB);
    expect(covered).toBeGreaterThan(5 * 1024 ** 4); // S3's largest object, 5 TiB
    expect(partSizeOf(9_999, "equal", 64 * MiB)).toBe(64 * MiB);
  });

  it("lists an abandoned multipart upload once it is old enough, and aborts it", async () => {
    const o = settings();
    const store = s3BlobStore(o);
    const raw = rawClient();
    try {
      const { key, uploadId: UploadId, part } = await beginUpload(raw, o.prefix!);
      await part();
      expect(await store.listAbandonedUploads({ olderThanMs: 3_600_000, limit: 10 })).toEqual([]);
      await new Promise((r) => setTimeout(r, 1100));
      const found = await store.listAbandonedUploads({ olderThanMs: 500, limit: 10 });
      expect(found.map((u) => [u.key, u.uploadId])).toEqual([[key, UploadId]]);
      await store.abortUpload(found[0]!);
      await store.abortUpload(found[0]!); // gone already: fine
      expect(await store.listAbandonedUploads({ olderThanMs: 0, limit: 10 })).toEqual([]);
    } finally {
      raw.destroy();
      store.close();
    }
  });

  it("does not count an upload begun long ago as abandoned while its parts keep coming", async () => {
    const o = settings();
    const store = s3BlobStore(o);
    const raw = rawClient();
    try {
      const { key, uploadId: UploadId, part } = await beginUpload(raw, o.prefix!);
      await new Promise((r) => setTimeout(r, 2100));
      // Begun over 2 s ago, its last part a moment ago: a long upload still going.
      await part();
      expect(await store.listAbandonedUploads({ olderThanMs: 2000, limit: 10 })).toEqual([]);
      await new Promise((r) => setTimeout(r, 2100));
      expect((await store.listAbandonedUploads({ olderThanMs: 2000, limit: 10 })).map((u) => u.uploadId)).toEqual([UploadId]);
      await store.abortUpload({ key, uploadId: UploadId!, initiated: new Date() });
    } finally {
      raw.destroy();
      store.close();
    }
  });

  it("the object store down: BlobStoreUnavailable, quickly; back up: the same store works again", async () => {
    const store = s3BlobStore(settings());
    try {
      const { sha256 } = await store.put(Buffer.from("before the outage"));
      await os.stopGateway();
      try {
        for (const op of [() => store.get(sha256), () => store.head(sha256), () => store.put(Buffer.from("during")), () => store.check()]) {
          const err = await op().then(() => undefined, (e: unknown) => e);
          expect(err).toBeInstanceOf(BlobStoreUnavailable);
          expect((err as BlobStoreUnavailable).retryAfterSeconds).toBeGreaterThan(0);
        }
      } finally {
        await os.startGateway();
      }
      expect(await text(await store.get(sha256))).toBe("before the outage");
      expect((await store.put(Buffer.from("after"))).sha256).toBe(sha("after"));
      await store.check();
    } finally {
      store.close();
    }
  });

  it("a missing bucket or refused credentials: BlobStoreMisconfigured naming the setting, never the secret", async () => {
    const secret = "Sup3r-Secret-Key-Never-Shown";
    const cases: [Partial<S3BlobStoreOptions>, string][] = [
      [{ bucket: "no-such-bucket-here" }, "svc.storage.s3.bucket"],
      [{ secretKey: secret }, "svc.storage.s3.access-key"],
      [{ accessKey: "NOSUCHKEY123", secretKey: secret }, "svc.storage.s3.access-key"],
    ];
    for (const [more, setting] of cases) {
      const store = s3BlobStore(settings(more));
      try {
        for (const op of [() => store.check(), () => store.put(Buffer.from("x"))]) {
          const err = await op().then(() => undefined, (e: unknown) => e);
          expect(err).toBeInstanceOf(BlobStoreMisconfigured);
          expect((err as BlobStoreMisconfigured).setting).toBe(setting);
          expect((err as Error).message).toContain(setting);
          expect(`${(err as Error).message} ${(err as Error).stack}`).not.toContain(secret);
          expect((err as Error).message).not.toContain(os.secretKey);
        }
      } finally {
        store.close();
      }
    }
    expect(() => s3BlobStore(settings({ secretKey: undefined }))).toThrow(BlobStoreMisconfigured);
    await s3BlobStore(settings()).check();
  });
});

describe("s3BlobStore with the small-blob cache (withSmallBlobCache, as the artifacts service opens it)", () => {
  blobStoreContract(async () => {
    const o = settings();
    const inner = s3BlobStore(o);
    const innerReadOnly = s3BlobStore({ ...o, readOnly: true });
    return {
      store: withSmallBlobCache(inner),
      readOnly: withSmallBlobCache(innerReadOnly),
      cleanup: async () => {
        inner.close();
        innerReadOnly.close();
      },
    };
  });

  it("keeps a small blob once read whole, serves it while the store is away unless asked for a fresh read, and forgets it on delete", async () => {
    const inner = s3BlobStore(settings());
    const store = withSmallBlobCache(inner, { maxBlobBytes: 1024 });
    try {
      const small = await store.put(Buffer.from("a small blob"));
      const large = await store.put(Buffer.alloc(4096, 7));
      expect(store.readSmall!(small.sha256, 1024)).toBeUndefined();
      expect(await text(await store.get(small.sha256))).toBe("a small blob");
      expect(await text(await store.get(small.sha256, { start: 2, end: 6 }))).toBe("small");
      expect((await text(await store.get(large.sha256)))?.length).toBe(4096);
      expect(store.readSmall!(small.sha256, 1024)?.toString()).toBe("a small blob");
      expect(store.readSmall!(large.sha256, 1024 * 1024)).toBeUndefined();
      await os.stopGateway();
      try {
        expect(await text(await store.get(small.sha256))).toBe("a small blob");
        await expect(store.get(small.sha256, undefined, { fresh: true })).rejects.toBeInstanceOf(BlobStoreUnavailable);
        await expect(store.get(large.sha256)).rejects.toBeInstanceOf(BlobStoreUnavailable);
      } finally {
        await os.startGateway();
      }
      expect(await store.delete(small.sha256)).toBe(true);
      expect(store.readSmall!(small.sha256, 1024)).toBeUndefined();
      expect(await store.get(small.sha256)).toBeUndefined();
    } finally {
      inner.close();
    }
  });
});
