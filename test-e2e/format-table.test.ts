import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { encodePrincipal, type ArtifactEvent } from "@svc/contracts";
import { createDatabase } from "@svc/devstack";
import { createDb, createLogger, createMetrics, identityHeaders, migrate, type Wiring } from "@svc/kit";
import { loadConfig } from "../services/artifacts/src/config.js";
import { FORMATS } from "../services/artifacts/src/formats/index.js";
import type { FormatModule } from "../services/artifacts/src/formats/format.js";
import { migrationsOf } from "../services/artifacts/src/store/migrations.js";
import { SCHEMA, type ArtifactsDatabase } from "../services/artifacts/src/store/schema.js";
import { wireArtifacts } from "../services/artifacts/src/wiring.js";
import { toyFormat } from "./toy-format/index.js";

const SECRET = "format-table-test-secret-0123456789abcdef";
const ADMIN = encodePrincipal({ kind: "key", tenant: "default", id: "f".repeat(64) });

/**
 * The artifacts service as main.ts wires it (its own Postgres database, a file store in a
 * temporary folder; events caught instead of sent to NATS), with the format table given.
 */
async function artifactsWith(table: readonly FormatModule[], name: string) {
  const root = mkdtempSync(join(tmpdir(), "format-table-"));
  const databaseUrl = await createDatabase(inject("adminDatabaseUrl"), name);
  const { db, pool } = createDb<ArtifactsDatabase>(databaseUrl, { max: 4 });
  await migrate(db as never, pool, SCHEMA, migrationsOf(table));
  const config = loadConfig([], {
    SVC_DATABASE_URL: databaseUrl,
    SVC_INTERNAL_SECRET: SECRET,
    SVC_FILESYSTEM_ROOT: root,
    SVC_NATS_URL: "nats://127.0.0.1:1",
    // Requests are injected, with no socket whose idle timer could watch an upload.
    SVC_UPLOAD_IDLE_TIMEOUT: "0",
  });
  const events: ArtifactEvent[] = [];
  const bus = {
    publish: async (_kind: string, event: ArtifactEvent) => {
      events.push(event);
      return true;
    },
    // No NATS here: the read cache stays off (it answers only while events arrive).
    subscribe: () => {},
    respond: () => {},
    listen: () => {},
    // No NATS: a repository change's announcement to the gateways is not sent.
    announce: () => false,
    connected: () => false,
    losses: () => 0,
  };
  const wiring: Wiring = await wireArtifacts({ config, log: createLogger("artifacts", "silent").log, metrics: createMetrics("artifacts"), bus: bus as never, db, pool, replica: false }, table);
  const call = (method: "GET" | "PUT" | "POST" | "DELETE", url: string, body?: string, headers: Record<string, string> = {}) =>
    wiring.app.inject({ method, url, headers: identityHeaders(SECRET, method, url, ADMIN, Date.now(), { body, headers }), payload: body });
  const stop = async () => {
    await wiring.app.close();
    for (const close of wiring.closers ?? []) await close();
    await db.destroy();
    rmSync(root, { recursive: true, force: true });
  };
  return { call, events, stop };
}

describe("a format is one folder and one row of the format table", () => {
  const removed: string[] = [];
  let withToy: Awaited<ReturnType<typeof artifactsWith>>;
  let without: Awaited<ReturnType<typeof artifactsWith>>;

  beforeAll(async () => {
    withToy = await artifactsWith([...FORMATS, toyFormat(removed)], `artifacts_toy_${process.pid}`);
    without = await artifactsWith(FORMATS, `artifacts_notoy_${process.pid}`);
  });
  afterAll(async () => {
    await withToy?.stop();
    await without?.stop();
  });

  it("a repository of the toy format is created, reaches the toy's handler, and its files' removals run the toy's hook", async () => {
    const created = await withToy.call("POST", "/api/repositories", JSON.stringify({ name: "toys", format: "toy" }), { "content-type": "application/json" });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ name: "toys", format: "toy" });

    const hello = await withToy.call("GET", "/repository/toys/hello");
    expect(hello.statusCode).toBe(200);
    expect(hello.body).toBe("the toy format answers for toys (greeting 1)");
    // Its own table, made by its own migration.
    expect((await withToy.call("GET", "/repository/toys/hello")).body).toBe("the toy format answers for toys (greeting 2)");
    // Another format's repository never reaches the toy's handler.
    expect((await withToy.call("GET", "/repository/default/hello")).statusCode).toBe(404);

    // What the toy leaves goes to the file routes, with its coordinates in the events.
    const put = await withToy.call("PUT", "/repository/toys/kit/kit-1.txt", "toy content", { "content-type": "text/plain" });
    expect(put.statusCode).toBe(201);
    const got = await withToy.call("GET", "/repository/toys/kit/kit-1.txt");
    expect(got.statusCode).toBe(200);
    expect(got.body).toBe("toy content");
    await expect.poll(() => withToy.events.find((e) => e.kind === "artifact.published" && e.path === "kit/kit-1.txt")).toMatchObject({ package: { format: "toy", name: "kit", version: "1", file: "kit/kit-1.txt" } });

    expect(removed).toEqual([]);
    expect((await withToy.call("DELETE", "/repository/toys/kit/kit-1.txt")).statusCode).toBe(204);
    expect(removed).toEqual(["kit/kit-1.txt"]);
    expect((await withToy.call("GET", "/repository/toys/kit/kit-1.txt")).statusCode).toBe(404);
    await expect.poll(() => withToy.events.find((e) => e.kind === "artifact.removed" && e.path === "kit/kit-1.txt")).toMatchObject({ package: { format: "toy", name: "kit" } });
  });

  it("without its row, the same service refuses the format, listing the table's", async () => {
    const refused = await without.call("POST", "/api/repositories", JSON.stringify({ name: "toys", format: "toy" }), { "content-type": "application/json" });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ field: "format", detail: "format must be one of raw, npm, maven, pypi, go, cargo, oci" });
  });
});
