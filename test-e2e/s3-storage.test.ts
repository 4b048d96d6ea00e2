import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startObjectStore, type ObjectStore } from "@svc/devstack";
import { startSuite, type Suite } from "./suite.js";

/** The whole suite with svc.storage=s3 on a real RADOS Gateway: what is published lands in the bucket and is served from it. */
describe("the suite on the S3 blob store", () => {
  let os: ObjectStore;
  let s: Suite;
  const dataDir = mkdtempSync(join(tmpdir(), "svc-s3e-"));
  const prefix = "svc/";
  beforeAll(async () => {
    os = await startObjectStore({ dataDir, log: () => {} });
    await os.createBucket("svc-suite");
    s = await startSuite({
      env: {
        SVC_STORAGE: "s3",
        SVC_STORAGE_S3_BUCKET: "svc-suite",
        SVC_STORAGE_S3_ENDPOINT: os.endpoint,
        SVC_STORAGE_S3_PATH_STYLE: "true",
        SVC_STORAGE_S3_PREFIX: prefix,
        SVC_STORAGE_S3_ACCESS_KEY: os.accessKey,
        SVC_STORAGE_S3_SECRET_KEY: os.secretKey,
      },
    });
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
    await os?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("stores a published file as a blob in the bucket and serves it whole and in ranges", async () => {
    const body = "hello from the bucket\n";
    const sha256 = createHash("sha256").update(body).digest("hex");
    const put = await s.call("PUT", "/repository/default/s3/hello.txt", { key: s.bootstrapKey, body, headers: { "content-type": "text/plain" } });
    expect(put.status).toBe(201);
    expect(((await put.json()) as { sha256: string }).sha256).toBe(sha256);
    const client = new S3Client({ endpoint: os.endpoint, region: os.region, forcePathStyle: true, credentials: { accessKeyId: os.accessKey, secretAccessKey: os.secretKey } });
    try {
      const keys = (await client.send(new ListObjectsV2Command({ Bucket: "svc-suite", Prefix: prefix }))).Contents?.map((c) => c.Key);
      expect(keys).toContain(`${prefix}blobs/sha256/${sha256.slice(0, 2)}/${sha256}`);
      // The staged copy went once the index row committed (the check object of each start too).
      expect(keys?.filter((k) => k?.startsWith(`${prefix}staging/`))).toEqual([]);
    } finally {
      client.destroy();
    }
    const get = await s.call("GET", "/repository/default/s3/hello.txt", { key: s.bootstrapKey });
    expect(get.status).toBe(200);
    expect(await get.text()).toBe(body);
    const range = await s.call("GET", "/repository/default/s3/hello.txt", { key: s.bootstrapKey, headers: { range: "bytes=6-9" } });
    expect(range.status).toBe(206);
    expect(await range.text()).toBe("from");
  });

  it("a read-only mirror on the same bucket and database serves what the writer publishes at once, and refuses every write with 403", async () => {
    // docs/install/read-only-mirror.md: the public nodes run with svc.read-only=true on the writer's bucket and database.
    const mirror = await s.startReplica("artifacts", { SVC_READ_ONLY: "true" });
    const front = await s.startGateway({ SVC_ARTIFACTS_URL: mirror.url, SVC_READ_ONLY: "true" });
    try {
      const at = (gateway: string, path: string, init: RequestInit = {}) =>
        fetch(`${gateway}/repository/default/${path}`, { ...init, headers: { "service-repository-key": s.bootstrapKey, ...(init.headers as Record<string, string> | undefined) } });
      for (let i = 0; i < 3; i++) {
        const path = `mirror/file-${i}.txt`;
        expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body: `published ${i}\n` })).status).toBe(201);
        const got = await at(front.url, path);
        expect(got.status, path).toBe(200);
        expect(await got.text()).toBe(`published ${i}\n`);
      }
      const refused = await at(front.url, "mirror/from-the-mirror.txt", { method: "PUT", body: "no" });
      expect(refused.status).toBe(403);
      expect((await at(front.url, "mirror/file-0.txt", { method: "DELETE" })).status).toBe(403);
      // Nothing of the refused write landed, and the writer still holds what it published.
      expect((await s.call("GET", "/repository/default/mirror/from-the-mirror.txt", { key: s.bootstrapKey })).status).toBe(404);
      expect((await s.call("GET", "/repository/default/mirror/file-0.txt", { key: s.bootstrapKey })).status).toBe(200);
    } finally {
      await front.stop();
      await mirror.stop();
    }
  });

  it("is not ready while the object store is down, and serves again once it is back, without a restart", async () => {
    const ready = async () => (await fetch(`${s.urls.artifacts}/health/ready`)).status;
    expect(await ready()).toBe(200);
    await os.stopGateway();
    try {
      expect(await ready()).toBe(503);
      const admin = (await (await s.call("GET", "/health/ready", { key: s.bootstrapKey })).json()) as { checks: Record<string, { status: string }> };
      expect(admin.checks.artifacts?.status).toBe("down");
      // An outage we expect: 503 with Retry-After, never a 500; the upload leaves nothing behind.
      const refusedPut = await s.call("PUT", "/repository/default/s3/during.txt", { key: s.bootstrapKey, body: "during the outage\n" });
      expect(refusedPut.status).toBe(503);
      expect(refusedPut.headers.get("retry-after")).toMatch(/^\d+$/);
      const refusedGet = await s.call("GET", "/repository/default/s3/hello.txt", { key: s.bootstrapKey, headers: { "cache-control": "no-cache" } });
      expect(refusedGet.status).toBe(503);
      expect(refusedGet.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await refusedGet.text()).not.toMatch(/secret|access-key|SVC_STORAGE|stack/i);
      // Without no-cache, a small file read before the outage is served from the node's memory (its digest's bytes never change).
      const kept = await s.call("GET", "/repository/default/s3/hello.txt", { key: s.bootstrapKey });
      expect(kept.status).toBe(200);
      expect(await kept.text()).toBe("hello from the bucket\n");
    } finally {
      await os.startGateway();
    }
    expect(await ready()).toBe(200);
    const get = await s.call("GET", "/repository/default/s3/hello.txt", { key: s.bootstrapKey });
    expect(await get.text()).toBe("hello from the bucket\n");
    const put = await s.call("PUT", "/repository/default/s3/after.txt", { key: s.bootstrapKey, body: "after the outage\n" });
    expect(put.status).toBe(201);
    // The upload refused during the outage was not stored.
    expect((await s.call("GET", "/repository/default/s3/during.txt", { key: s.bootstrapKey })).status).toBe(404);
  });
});
