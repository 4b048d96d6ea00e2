// The read-only mirror of the spec on a read replica of the writer's database
// (docs/install/read-only-mirror.md): a hot standby streaming from the writer's Postgres. The
// mirror's artifacts node checks the schema instead of migrating it, writes nothing, and serves
// what the writer publishes; a service that writes refuses to start on a replica, saying why.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startInfra, type Infra } from "@svc/devstack";
import { runToExit } from "@svc/devstack/service-runner";
import { startSuite, type Suite } from "./suite.js";

describe("a read-only mirror on a read replica of the writer's database", () => {
  let infra: Infra;
  let s: Suite;
  let replica: Awaited<ReturnType<Infra["startReadReplica"]>>;
  let replicaUrl: string;
  beforeAll(async () => {
    // A Postgres of this file's own (the writer's), so its replica copies nothing of other files.
    const dir = join(inject("dataDir"), `replica-primary-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    infra = await startInfra({ dataDir: dir, log: () => {}, env: { SVC_REDIS_URL: inject("redisUrl"), SVC_NATS_URL: inject("natsUrl") } });
    s = await startSuite({ env: { SVC_DATABASE_URL: infra.databaseUrl } });
    replica = await infra.startReadReplica();
    replicaUrl = replica.databaseUrl("svc");
  }, 300_000);
  afterAll(async () => {
    await s?.stop();
    await replica?.stop();
    await infra?.stop();
  });

  it("serves what the writer publishes once the replica has it, and refuses every write with 403", async () => {
    const mirror = await s.startReplica("artifacts", { SVC_READ_ONLY: "true", SVC_DATABASE_URL: replicaUrl });
    const front = await s.startGateway({ SVC_ARTIFACTS_URL: mirror.url, SVC_READ_ONLY: "true" });
    try {
      expect(mirror.output().join("\n")).toMatch(/svc\.database-url is a read replica: the schema is checked, not migrated/);
      const at = (path: string, init: RequestInit = {}) =>
        fetch(`${front.url}/repository/default/${path}`, { ...init, headers: { "service-repository-key": s.bootstrapKey, ...(init.headers as Record<string, string> | undefined) } });
      for (let i = 0; i < 3; i++) {
        const path = `replica/file-${i}.txt`;
        expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body: `published ${i}\n` })).status).toBe(201);
        // Streaming replication: the row reaches the replica a moment after the writer's commit.
        let got = await at(path);
        for (const until = Date.now() + 15_000; got.status === 404 && Date.now() < until; got = await at(path)) await new Promise((r) => setTimeout(r, 100));
        expect(got.status, path).toBe(200);
        expect(await got.text()).toBe(`published ${i}\n`);
      }
      expect((await at("replica/from-the-mirror.txt", { method: "PUT", body: "no" })).status).toBe(403);
      expect((await at("replica/file-0.txt", { method: "DELETE" })).status).toBe(403);
      expect((await s.call("GET", "/repository/default/replica/file-0.txt", { key: s.bootstrapKey })).status).toBe(200);
      // Downloads on the mirror are served without a write: the node stays ready and logs no failed write.
      expect((await fetch(`${mirror.url}/health/ready`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 2_500)); // past the download recorder's flush (every 2 s)
      expect(mirror.output().filter((l) => /read-only transaction|could not record downloads/.test(l))).toEqual([]);
    } finally {
      await front.stop();
      await mirror.stop();
    }
  });

  it("refuses to start a writing artifacts node or another service on the replica, naming why", async () => {
    const env = {
      SVC_DATABASE_URL: replicaUrl,
      SVC_NATS_URL: inject("natsUrl"),
      SVC_INTERNAL_SECRET: "s".repeat(40),
      SVC_FILESYSTEM_ROOT: join(inject("dataDir"), `replica-refusals-${process.pid}`),
      SVC_PORT: "0",
    };
    const artifacts = await runToExit("artifacts", env);
    expect(artifacts.code).toBe(78);
    expect(artifacts.output).toMatch(/svc\.database-url is a read replica \(its server is in recovery\), and svc\.read-only is false/);
    const auth = await runToExit("auth", env);
    expect(auth.code).toBe(78);
    expect(auth.output).toMatch(/svc\.database-url is a read replica .*the auth service writes to its database: point it at the primary/);
  });
});
