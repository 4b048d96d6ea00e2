import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startObjectStore, type ObjectStore } from "@svc/devstack";
import { runToExit } from "@svc/devstack/service-runner";

/** svc.storage=s3: the services that hold the blob store refuse to start on wrong S3 settings, naming the setting. */
describe("start-up refusals of the S3 blob store", () => {
  let os: ObjectStore;
  const dataDir = mkdtempSync(join(tmpdir(), "svc-s3s-"));
  beforeAll(async () => {
    os = await startObjectStore({ dataDir, log: () => {} });
    await os.createBucket("svc-startup");
  }, 300_000);
  afterAll(async () => {
    await os?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = (more: Record<string, string>) => ({
    SVC_DATABASE_URL: inject("adminDatabaseUrl"),
    SVC_NATS_URL: inject("natsUrl"),
    SVC_INTERNAL_SECRET: "s".repeat(40),
    SVC_PORT: "0",
    SVC_STORAGE: "s3",
    SVC_STORAGE_S3_ENDPOINT: os.endpoint,
    SVC_STORAGE_S3_PATH_STYLE: "true",
    SVC_STORAGE_S3_ACCESS_KEY: os.accessKey,
    SVC_STORAGE_S3_SECRET_KEY: os.secretKey,
    SVC_STORAGE_S3_BUCKET: "svc-startup",
    ...more,
  });

  it("without a bucket, with a missing bucket, or with refused credentials: a clear refusal naming the setting, no secret shown", async () => {
    const wrongSecret = "Wr0ng-Secret-Never-Printed";
    for (const name of ["artifacts", "walker"] as const) {
      const none = await runToExit(name, env({ SVC_STORAGE_S3_BUCKET: "" }));
      expect(none.code, name).not.toBe(0);
      expect(none.output).toMatch(/svc\.storage\.s3\.bucket is required/);
      const missing = await runToExit(name, env({ SVC_STORAGE_S3_BUCKET: "no-such-bucket" }), [], 60_000);
      expect(missing.code, `${name}: ${missing.output}`).toBe(78);
      expect(missing.output).toMatch(new RegExp(`${name}: refusing to start: .*no bucket "no-such-bucket" \\(svc\\.storage\\.s3\\.bucket\\)`));
      const refused = await runToExit(name, env({ SVC_STORAGE_S3_SECRET_KEY: wrongSecret }), [], 60_000);
      expect(refused.code, `${name}: ${refused.output}`).toBe(78);
      expect(refused.output).toMatch(/refusing to start: .*svc\.storage\.s3\.access-key/);
      expect(refused.output).not.toContain(wrongSecret);
      expect(refused.output).not.toContain(os.secretKey);
    }
  });
});
