import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startObjectStore, type ObjectStore } from "./object-store.js";
import { pidAlive } from "./process.js";

describe("the object store of the tests (Ceph RADOS Gateway)", () => {
  let store: ObjectStore;
  let client: S3Client;
  const dataDir = mkdtempSync(join(tmpdir(), "svc-os-"));
  beforeAll(async () => {
    store = await startObjectStore({ dataDir, log: () => {} });
    client = new S3Client({
      endpoint: store.endpoint,
      region: store.region,
      forcePathStyle: true,
      credentials: { accessKeyId: store.accessKey, secretAccessKey: store.secretKey },
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }, 300_000);
  afterAll(async () => {
    client?.destroy();
    await store?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const roundTrip = async (bucket: string, key: string, body: string) => {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return got.Body?.transformToString();
  };

  it("serves S3 on its own port with its own keys: a bucket made, an object put and read back", async () => {
    expect(store.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await store.createBucket("devstack-test");
    await store.createBucket("devstack-test"); // again: fine
    expect(await roundTrip("devstack-test", "a/b.txt", "hello object store")).toBe("hello object store");
  });

  it("refuses a wrong secret key", async () => {
    const wrong = new S3Client({ endpoint: store.endpoint, region: store.region, forcePathStyle: true, credentials: { accessKeyId: store.accessKey, secretAccessKey: "not-the-secret" } });
    try {
      await expect(wrong.send(new GetObjectCommand({ Bucket: "devstack-test", Key: "a/b.txt" }))).rejects.toMatchObject({ name: "SignatureDoesNotMatch" });
    } finally {
      wrong.destroy();
    }
  });

  it("stops the gateway alone and starts it again on the same port, the data kept", async () => {
    const before = store.pids();
    await store.stopGateway();
    expect(pidAlive(before.rgw!)).toBe(false);
    await expect(client.send(new GetObjectCommand({ Bucket: "devstack-test", Key: "a/b.txt" }))).rejects.toThrow();
    await store.startGateway();
    const got = await client.send(new GetObjectCommand({ Bucket: "devstack-test", Key: "a/b.txt" }));
    expect(await got.Body?.transformToString()).toBe("hello object store");
    expect(store.pids().mon).toBe(before.mon);
  });

  it("leaves no daemon behind once stopped", async () => {
    const pids = Object.values(store.pids());
    expect(pids).toHaveLength(3);
    await store.stop();
    for (const pid of pids) expect(pidAlive(pid!)).toBe(false);
  });
});
