import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startObjectStore, type ObjectStore } from "@svc/devstack";
import { s3BlobStore } from "../packages/blobs/src/index.js";
import { localActionsFactory } from "../services/walker/src/domain/local-actions.js";
import { startSuite, type Suite } from "./suite.js";

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deterministic, incompressible-looking content of `size` bytes (the same for the same seed). */
function content(size: number, seed: string): Buffer {
  const out = Buffer.alloc(size);
  let block = createHash("sha256").update(seed).digest();
  for (let at = 0; at < size; at += block.length) {
    block.copy(out, at);
    block = createHash("sha256").update(block).digest();
  }
  return out;
}

/**
 * The object store failing while bytes flow: stopped mid-upload and mid-download, and hung
 * (the gateway frozen with SIGSTOP). Its own object store: the faults would upset other files.
 */
describe("the S3 blob store failing under a transfer", () => {
  let os: ObjectStore;
  let s: Suite;
  let s3: S3Client;
  const dataDir = mkdtempSync(join(tmpdir(), "svc-s3f-"));
  const bucket = "svc-faults";
  const prefix = "svc/";
  beforeAll(async () => {
    os = await startObjectStore({ dataDir, log: () => {} });
    await os.createBucket(bucket);
    s = await startSuite({
      env: {
        SVC_STORAGE: "s3",
        SVC_STORAGE_S3_BUCKET: bucket,
        SVC_STORAGE_S3_ENDPOINT: os.endpoint,
        SVC_STORAGE_S3_PATH_STYLE: "true",
        SVC_STORAGE_S3_PREFIX: prefix,
        SVC_STORAGE_S3_ACCESS_KEY: os.accessKey,
        SVC_STORAGE_S3_SECRET_KEY: os.secretKey,
        // A hung store is given up on after 2 × 10 s of silence here (20 s by default; 5 s cut a
        // flowing upload short on a machine whose cores were busy).
        SVC_STORAGE_S3_IDLE_TIMEOUT: "10s",
      },
    });
    s3 = new S3Client({ endpoint: os.endpoint, region: os.region, forcePathStyle: true, credentials: { accessKeyId: os.accessKey, secretAccessKey: os.secretKey } });
  }, 600_000);
  afterAll(async () => {
    s3?.destroy();
    os?.resumeGateway();
    await s?.stop();
    await os?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const url = (path: string) => new URL(`/repository/default/${path}`, s.gatewayUrl);
  const keys = async (under: string) => {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}${under}`, ...(token ? { ContinuationToken: token } : {}) }));
      out.push(...(page.Contents ?? []).map((c) => c.Key!));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  };
  const uploads = async () => (await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads ?? [];
  const ready = async () => (await fetch(`${s.urls.artifacts}/health/ready`)).status;
  const live = async () => (await fetch(`${s.urls.artifacts}/health/live`)).status;

  it("stopped mid-upload: the PUT gets 503 with Retry-After, nothing is stored, and the same PUT succeeds once the store is back", async () => {
    const body = content(48 * MiB, "mid-upload");
    const sha256 = createHash("sha256").update(body).digest("hex");
    const path = "faults/mid-upload.bin";
    const blobsBefore = await keys("blobs/");

    // A slow PUT: 1 MiB at a time; the gateway is stopped once 24 MiB went (parts of 8 MiB are on their way).
    let stopping: Promise<void> | undefined;
    const outcome = await new Promise<{ status?: number; retryAfter?: string; body?: string; error?: string; sent: number }>((resolve) => {
      let sent = 0;
      let done = false;
      const finish = (o: { status?: number; retryAfter?: string; body?: string; error?: string }) => {
        if (done) return;
        done = true;
        resolve({ ...o, sent });
      };
      const req = request(url(path), { method: "PUT", headers: { "service-repository-key": s.bootstrapKey, "content-type": "application/octet-stream", "content-length": String(body.length) } }, (res: IncomingMessage) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => finish({ status: res.statusCode, retryAfter: res.headers["retry-after"] as string | undefined, body: text }));
        res.on("error", (err) => finish({ status: res.statusCode, error: err.message }));
      });
      req.on("error", (err) => finish({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
      void (async () => {
        for (let at = 0; at < body.length && !done && !req.destroyed; at += MiB) {
          if (at === 24 * MiB) await (stopping = os.stopGateway());
          if (!req.write(body.subarray(at, at + MiB))) await new Promise((r) => req.once("drain", r).once("close", r));
          sent = at + MiB;
          await sleep(20);
        }
        if (!done && !req.destroyed) req.end();
      })();
    });
    try {
      // The answer comes while the client still sends: the service answered it (the upload's
      // failure is an outage it expects), never a 500, and nothing of the secret settings in it.
      expect(outcome.error, JSON.stringify(outcome)).toBeUndefined();
      expect(outcome.status, JSON.stringify(outcome)).toBe(503);
      expect(outcome.retryAfter).toMatch(/^\d+$/);
      expect(outcome.body).not.toMatch(/secret|access-key|stack/i);
      expect(outcome.sent).toBeLessThan(body.length);
      // Not in the index while the store is down either.
      expect((await s.call("GET", `/repository/default/${path}`, { key: s.bootstrapKey })).status).toBe(404);
    } finally {
      await stopping;
      await os.startGateway();
    }
    // Nothing half-stored: no blob, no staged object, no index row.
    expect(await keys("blobs/")).toEqual(blobsBefore);
    expect(await keys("staging/")).toEqual([]);
    expect((await s.call("GET", `/repository/default/${path}`, { key: s.bootstrapKey })).status).toBe(404);
    // The multipart upload the outage cut could not be aborted then: it is left for the reclaim walk.
    const left = await uploads();
    expect(left.map((u) => u.Key!.startsWith(`${prefix}staging/`))).toEqual([true]);
    // The reclaim walk's path over it (the walker's store, its action), without the hour it waits first.
    const walkerStore = s3BlobStore({ bucket, endpoint: os.endpoint, region: os.region, pathStyle: true, prefix, accessKey: os.accessKey, secretKey: os.secretKey, readOnly: false });
    try {
      const abandoned = await walkerStore.listAbandonedUploads({ olderThanMs: 0, limit: 10 });
      expect(abandoned.map((u) => u.uploadId)).toEqual(left.map((u) => u.UploadId));
      const actions = localActionsFactory(walkerStore);
      for (const u of abandoned) expect(await actions.abortUpload(u)).toBe(true);
      expect(await uploads()).toEqual([]);
    } finally {
      walkerStore.close();
    }

    // The same PUT, without a restart of anything.
    const again = await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body, headers: { "content-type": "application/octet-stream" } });
    expect(again.status).toBe(201);
    expect(((await again.json()) as { sha256: string }).sha256).toBe(sha256);
    const got = await s.call("GET", `/repository/default/${path}`, { key: s.bootstrapKey });
    expect(got.status).toBe(200);
    expect(createHash("sha256").update(Buffer.from(await got.arrayBuffer())).digest("hex")).toBe(sha256);
  });

  it("stopped mid-download: the client sees a cut transfer, never a short 'complete' one; the service stays up and serves the whole file once the store is back", async () => {
    const body = content(96 * MiB, "mid-download");
    const sha256 = createHash("sha256").update(body).digest("hex");
    const path = "faults/mid-download.bin";
    expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body, headers: { "content-type": "application/octet-stream" } })).status).toBe(201);

    let stopping: Promise<void> | undefined;
    const outcome = await new Promise<{ status?: number; length?: number; received: number; complete: boolean; error?: string }>((resolve) => {
      const req = request(url(path), { method: "GET", headers: { "service-repository-key": s.bootstrapKey } }, (res) => {
        let received = 0;
        let stopped = false;
        res.on("data", (d: Buffer) => {
          received += d.length;
          if (!stopped && received >= 4 * MiB) {
            // Read nothing more until the store is gone: the rest is still in the store's hands.
            stopped = true;
            res.pause();
            void (stopping = os.stopGateway()).then(() => res.resume());
          }
        });
        const length = Number(res.headers["content-length"]);
        res.on("end", () => resolve({ status: res.statusCode, length, received, complete: res.complete }));
        res.on("aborted", () => resolve({ status: res.statusCode, length, received, complete: false, error: "aborted" }));
        res.on("error", (err) => resolve({ status: res.statusCode, length, received, complete: res.complete, error: err.message }));
      });
      req.on("error", (err) => resolve({ received: 0, complete: false, error: err.message }));
      req.end();
    });
    try {
      expect(outcome.status, JSON.stringify(outcome)).toBe(200);
      expect(outcome.length).toBe(body.length);
      // Cut: fewer bytes than Content-Length, and the response not complete.
      expect(outcome.received, JSON.stringify(outcome)).toBeLessThan(body.length);
      expect(outcome.complete, JSON.stringify(outcome)).toBe(false);
      // The artifacts service stays up (not ready while the store is away).
      expect(await live()).toBe(200);
      expect(await ready()).toBe(503);
    } finally {
      await stopping;
      await os.startGateway();
    }
    expect(await ready()).toBe(200);
    const got = await s.call("GET", `/repository/default/${path}`, { key: s.bootstrapKey });
    expect(got.status).toBe(200);
    const bytes = Buffer.from(await got.arrayBuffer());
    expect(bytes.length).toBe(body.length);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(sha256);
  });

  it("hung (the gateway frozen): requests end in a bounded time with 503 and Retry-After, readiness shows the store down, and it works again once it thaws", async () => {
    const path = "faults/hung.txt";
    expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body: "before the freeze\n" })).status).toBe(201);
    os.pauseGateway();
    try {
      // Both at once: each waits for the client's timeouts.
      const [get, put] = await Promise.all([
        s.call("GET", `/repository/default/${path}`, { key: s.bootstrapKey, headers: { "cache-control": "no-cache" } }),
        s.call("PUT", "/repository/default/faults/during-the-freeze.txt", { key: s.bootstrapKey, body: "during the freeze\n" }),
      ]);
      for (const r of [get, put]) {
        expect(r.status).toBe(503);
        expect(r.headers.get("retry-after")).toMatch(/^\d+$/);
      }
      expect(await ready()).toBe(503);
      const admin = (await (await s.call("GET", "/health/ready", { key: s.bootstrapKey })).json()) as { checks: Record<string, { status: string }> };
      expect(admin.checks.artifacts?.status).toBe("down");
    } finally {
      os.resumeGateway();
    }
    for (let i = 0; i < 50 && (await ready()) !== 200; i++) await sleep(200);
    expect(await ready()).toBe(200);
    const got = await s.call("GET", `/repository/default/${path}`, { key: s.bootstrapKey });
    expect(await got.text()).toBe("before the freeze\n");
    expect((await s.call("PUT", "/repository/default/faults/after-the-freeze.txt", { key: s.bootstrapKey, body: "after\n" })).status).toBe(201);
    expect((await s.call("GET", "/repository/default/faults/during-the-freeze.txt", { key: s.bootstrapKey })).status).toBe(404);
  }, 300_000);
});
