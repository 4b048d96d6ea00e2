import { createHash, randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ArtifactEvent } from "@svc/contracts";
import { startInfra, type Infra } from "@svc/devstack";
import { startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";

const sha = (s: string) => `sha256:${createHash("sha256").update(s).digest("hex")}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Each test writes under its own folder: the shared NATS carries every test file's events. */
const folder = () => `events-${randomBytes(6).toString("hex")}`;

describe("artifact events", () => {
  let s: Suite;
  let key: { id: string; key: string };
  beforeAll(async () => {
    s = await startSuite();
    key = await s.mint({ label: "ci", grants: [{ scope: "*", tokens: ["deploy"] }] });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("a PUT and a DELETE through the gateway publish exactly the documented events, with the key as actor", async () => {
    const dir = folder();
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.path.startsWith(`${dir}/`));
    try {
      const put = await s.call("PUT", `/repository/default/${dir}/app.txt`, { key: key.key, body: "hello events" });
      expect(put.status).toBe(201);
      expect((await s.call("PUT", `/repository/default/${dir}/app.txt`, { key: key.key, body: "hello again" })).status).toBe(200);
      expect((await s.call("DELETE", `/repository/default/${dir}/app.txt`, { key: key.key })).status).toBe(204);
      // A last event after them: the stream keeps order, so once it is in, nothing else of ours is on its way.
      expect((await s.call("PUT", `/repository/default/${dir}/sentinel.txt`, { key: key.key, body: "." })).status).toBe(201);
      const got = await events.until("the sentinel's event", (es) => es.some((e) => e.path === `${dir}/sentinel.txt`));

      expect(got.map((e) => `${e.kind} ${e.path}`)).toEqual([
        `artifact.published ${dir}/app.txt`,
        `artifact.published ${dir}/app.txt`,
        `artifact.removed ${dir}/app.txt`,
        `artifact.published ${dir}/sentinel.txt`,
      ]);
      const [first, second, removed] = got as [ArtifactEvent, ArtifactEvent, ArtifactEvent];
      const common = { tenant: s.tenant, repository: "default", path: `${dir}/app.txt`, actor: { kind: "key", id: key.id } };
      expect(first).toEqual({ ...common, kind: "artifact.published", id: expect.stringMatching(UUID), time: expect.any(String), size: 12, digest: sha("hello events"), replaced: false });
      expect(second).toEqual({ ...common, kind: "artifact.published", id: expect.stringMatching(UUID), time: expect.any(String), size: 11, digest: sha("hello again"), replaced: true });
      expect(removed).toEqual({ ...common, kind: "artifact.removed", id: expect.stringMatching(UUID), time: expect.any(String), size: 11, digest: sha("hello again"), reason: "request" });
      expect(new Set(got.map((e) => e.id)).size).toBe(4);
      for (const e of got) expect(new Date(e.time).toISOString()).toBe(e.time);
      expect(events.subjects.slice(0, 3)).toEqual([`svc.${s.tenant}.artifact.published.v1`, `svc.${s.tenant}.artifact.published.v1`, `svc.${s.tenant}.artifact.removed.v1`]);
    } finally {
      await events.close();
    }
  });

  it("keeps an event in the outbox only until it is sent", async () => {
    const dir = folder();
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.path.startsWith(`${dir}/`));
    const db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
    try {
      expect((await s.call("PUT", `/repository/default/${dir}/sent.txt`, { key: key.key, body: "sent" })).status).toBe(201);
      const [event] = await events.until("the event", (es) => es.length > 0);
      // Sent marks are written in batches (every 200 ms): wait for the row to go, not for a time.
      const deadline = Date.now() + 20_000;
      let rows: unknown[] = [];
      for (;;) {
        rows = (await db.query("select id from artifacts.outbox where id = $1", [event!.id])).rows;
        if (rows.length === 0 || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(rows).toEqual([]);
    } finally {
      await db.end();
      await events.close();
    }
  });

  it("a refused write publishes nothing", async () => {
    const dir = folder();
    const reader = await s.mint({ grants: [{ scope: "*", tokens: ["read-only"] }] });
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.path.startsWith(`${dir}/`));
    try {
      expect((await s.call("PUT", `/repository/default/${dir}/no.txt`, { key: reader.key, body: "no" })).status).toBe(403);
      expect((await s.call("DELETE", `/repository/default/${dir}/none.txt`, { key: key.key })).status).toBe(404);
      expect((await s.call("PUT", `/repository/default/${dir}/sentinel.txt`, { key: key.key, body: "." })).status).toBe(201);
      const got = await events.until("the sentinel's event", (es) => es.some((e) => e.path === `${dir}/sentinel.txt`));
      expect(got.map((e) => e.path)).toEqual([`${dir}/sentinel.txt`]);
    } finally {
      await events.close();
    }
  });
});

describe("artifact events while NATS is away", () => {
  let infra: Infra;
  let s: Suite;
  beforeAll(async () => {
    // A NATS of this test's own, so stopping it disturbs no other test file.
    const dir = join(inject("dataDir"), `nats-events-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    infra = await startInfra({ dataDir: dir, log: () => {}, env: { SVC_DATABASE_URL: inject("adminDatabaseUrl"), SVC_REDIS_URL: inject("redisUrl") } });
    s = await startSuite({ env: { SVC_NATS_URL: infra.natsUrl } });
  });
  afterAll(async () => {
    await s?.stop();
    await infra?.stop();
  });

  it("publishes and removals made while NATS is down are delivered from the outbox once it is back, once each", async () => {
    const dir = folder();
    // Make sure the stream exists before the outage (the services create it when they connect).
    expect((await s.call("PUT", `/repository/default/${dir}/before.txt`, { key: s.bootstrapKey, body: "before" })).status).toBe(201);
    await infra.stopServer("nats");
    try {
      expect((await s.call("PUT", `/repository/default/${dir}/during.txt`, { key: s.bootstrapKey, body: "during" })).status).toBe(201);
      expect((await s.call("DELETE", `/repository/default/${dir}/before.txt`, { key: s.bootstrapKey })).status).toBe(204);
      expect((await s.call("GET", `/repository/default/${dir}/during.txt`, { key: s.bootstrapKey })).status).toBe(200);
    } finally {
      await infra.startServer("nats");
    }
    const events = await collectArtifactEvents(infra.natsUrl, s.tenant, (e) => e.path.startsWith(`${dir}/`));
    try {
      const got = await events.until("the outage's events", (es) => es.some((e) => e.path === `${dir}/during.txt`) && es.some((e) => e.kind === "artifact.removed"), 60_000);
      expect(got.map((e) => `${e.kind} ${e.path}`).sort()).toEqual([
        `artifact.published ${dir}/before.txt`,
        `artifact.published ${dir}/during.txt`,
        `artifact.removed ${dir}/before.txt`,
      ].sort());
      expect(got.find((e) => e.path === `${dir}/during.txt`)).toMatchObject({ size: 6, digest: sha("during"), replaced: false });
      expect(got.find((e) => e.kind === "artifact.removed")).toMatchObject({ reason: "request", digest: sha("before") });
    } finally {
      await events.close();
    }
  });

  it("a read-only mirror on the writer's database and a NATS of its own leaves the writer's undelivered events to the writer", async () => {
    // docs/install/read-only-mirror.md: the mirror shares the database (and so the outbox), not the NATS.
    const dir = folder();
    const mirrorNats = inject("natsUrl");
    const mirror = await s.startReplica("artifacts", { SVC_READ_ONLY: "true", SVC_NATS_URL: mirrorNats });
    // The mirror makes the tenant's stream on its NATS once it connects.
    let onMirror: Awaited<ReturnType<typeof collectArtifactEvents>> | undefined;
    for (const until = Date.now() + 30_000; !onMirror; await new Promise((r) => setTimeout(r, 250))) {
      onMirror = await collectArtifactEvents(mirrorNats, s.tenant, (e) => e.path.startsWith(`${dir}/`)).catch((err: unknown) => {
        if (Date.now() > until) throw err;
        return undefined;
      });
    }
    try {
      await infra.stopServer("nats");
      try {
        expect((await s.call("PUT", `/repository/default/${dir}/while-away.txt`, { key: s.bootstrapKey, body: "away" })).status).toBe(201);
        // Past the relay's minimum age (5 s) and several of its sweeps (every 2 s): a mirror that
        // swept the shared outbox would have sent the event to its own NATS by now.
        await new Promise((r) => setTimeout(r, 9_000));
      } finally {
        await infra.startServer("nats");
      }
      const onWriter = await collectArtifactEvents(infra.natsUrl, s.tenant, (e) => e.path.startsWith(`${dir}/`));
      try {
        const got = await onWriter.until("the writer's event", (es) => es.some((e) => e.path === `${dir}/while-away.txt`), 60_000);
        expect(got.map((e) => `${e.kind} ${e.path}`)).toEqual([`artifact.published ${dir}/while-away.txt`]);
      } finally {
        await onWriter.close();
      }
      expect(onMirror.events).toEqual([]);
    } finally {
      await onMirror.close();
      await mirror.stop();
    }
  });
});
