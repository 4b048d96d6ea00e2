import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";
import { adminCaller, eventually, runWalk } from "./upstream.js";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const CONFIG = "application/vnd.oci.image.config.v1+json";
const LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";
const sha256 = (b: Buffer | string) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`gc:${key}`).toString("base64")}` });

/**
 * OCI garbage collection (the reclaim job) and image retention (the retention job), walks run
 * through the walks API; ages are made by back-dating the index rows (the grace is the default hour).
 */
describe("OCI garbage collection and image retention", () => {
  let s: Suite;
  let key: string;
  let db: pg.Client;
  let walks: Awaited<ReturnType<typeof adminCaller>>["call"];
  const v2 = (method: string, path: string, opts: { headers?: Record<string, string>; body?: Buffer | string } = {}) =>
    fetch(`${s.gatewayUrl}/v2/${path}`, { method, headers: { ...basic(key), ...opts.headers }, body: opts.body, redirect: "manual" } as RequestInit);
  const pushBlob = async (repo: string, image: string, bytes: Buffer) => {
    const d = sha256(bytes);
    const r = await v2("POST", `${repo}/${image}/blobs/uploads/?digest=${d}`, { headers: { "content-type": "application/octet-stream" }, body: bytes });
    expect(r.status).toBe(201);
    return { digest: d, size: bytes.length };
  };
  const pushManifest = async (repo: string, image: string, ref: string, config: { digest: string; size: number }, layers: { digest: string; size: number }[]) => {
    const body = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, ...config }, layers: layers.map((l) => ({ mediaType: LAYER, ...l })) }));
    const r = await v2("PUT", `${repo}/${image}/manifests/${ref}`, { headers: { "content-type": OCI_MANIFEST }, body });
    return { status: r.status, digest: sha256(body), body: r.status === 201 ? undefined : await r.text() };
  };
  const has = async (repo: string, image: string, kind: "blobs" | "manifests", digest: string) =>
    (await v2("HEAD", `${repo}/${image}/${kind}/${digest}`, { headers: { accept: OCI_MANIFEST } })).status === 200;
  const age = (repo: string, hours: number) => db.query(`update artifacts.artifacts set updated_at = now() - make_interval(hours => $2) where repository = $1`, [repo, hours]);
  const walk = (name: string) => runWalk(walks, name);

  beforeAll(async () => {
    s = await startSuite();
    walks = (await adminCaller(s, "/api/walks", "walker")).call;
    key = (await s.mint({ label: "gc", grants: [{ scope: "*", tokens: ["*"] }] })).key;
    for (const r of ["gc", "ret"]) expect((await s.call("POST", "/api/repositories", { key, body: { name: r, format: "oci" } })).status).toBe(201);
    expect((await walks("POST", "/api/walks", { name: "collect", schedule: "0 0 3 1 1 *", jobs: ["reclaim"] })).status).toBe(201);
    expect((await walks("POST", "/api/walks", { name: "images", schedule: "0 0 3 1 1 *", jobs: ["retention"] })).status).toBe(201);
    db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
  }, 600_000);
  afterAll(async () => {
    await db?.end();
    await s?.stop();
  });

  it("removes blobs no manifest references once past the grace, keeps referenced ones and those of an image with an upload open, and a deleted manifest's after the grace", async () => {
    const config = await pushBlob("gc", "app", randomBytes(64));
    const layer = await pushBlob("gc", "app", randomBytes(256));
    const orphan = await pushBlob("gc", "app", randomBytes(128));
    const m = await pushManifest("gc", "app", "v1", config, [layer]);
    expect(m.status).toBe(201);
    // Another image with a push under way: an upload session is open.
    const pending = await pushBlob("gc", "busy", randomBytes(32));
    expect((await v2("POST", "gc/busy/blobs/uploads/")).status).toBe(202);

    // Young: nothing goes.
    let run = await walk("collect");
    expect(run.outcome).toBe("succeeded");
    expect(run.counts.reclaim).toMatchObject({ collected: 0 });
    expect(await has("gc", "app", "blobs", orphan.digest)).toBe(true);

    await age("gc", 2);
    run = await walk("collect");
    expect(run.counts.reclaim).toMatchObject({ collected: 1, collectedBytes: 128 });
    expect(await has("gc", "app", "blobs", orphan.digest)).toBe(false);
    expect(await has("gc", "app", "blobs", config.digest)).toBe(true);
    expect(await has("gc", "app", "blobs", layer.digest)).toBe(true);
    expect(await has("gc", "busy", "blobs", pending.digest)).toBe(true);

    // A manifest pushed after its blob was collected is refused.
    const late = await pushManifest("gc", "app", "v2", config, [orphan]);
    expect(late.status).toBe(400);
    expect(late.body).toContain("MANIFEST_BLOB_UNKNOWN");

    // The manifest deleted: its blobs are released now, so they stay until the grace has passed since.
    expect((await v2("DELETE", `gc/app/manifests/${m.digest}`)).status).toBe(202);
    run = await walk("collect");
    expect(await has("gc", "app", "blobs", layer.digest)).toBe(true);
    await db.query(`update artifacts.oci_released set at = now() - interval '2 hours' where repository = 'gc'`);
    run = await walk("collect");
    expect(run.counts.reclaim).toMatchObject({ collected: 2 });
    expect(await has("gc", "app", "blobs", layer.digest)).toBe(false);
    expect(await has("gc", "app", "blobs", config.digest)).toBe(false);
    expect(await has("gc", "busy", "blobs", pending.digest)).toBe(true);
  });

  it("a manifest push racing a collection of its blob is refused MANIFEST_BLOB_UNKNOWN, never stored without it", async () => {
    const config = await pushBlob("gc", "race", randomBytes(64));
    const layer = await pushBlob("gc", "race", randomBytes(64));
    const path = `race/blobs/${layer.digest}`;
    // A collection's transaction: the blob's row locked for update, then removed.
    const gc = new pg.Client({ connectionString: s.databaseUrl });
    await gc.connect();
    try {
      await gc.query("begin");
      await gc.query("select 1 from artifacts.artifacts where repository = 'gc' and path = $1 for update", [path]);
      const push = pushManifest("gc", "race", "v1", config, [layer]);
      // The push waits on the row lock (its manifest row is not there while it waits).
      await eventually("the push to wait on the blob's row", async () => {
        const { rows } = await db.query("select 1 from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%for share%'");
        return rows.length > 0 ? true : undefined;
      });
      await gc.query("delete from artifacts.artifacts where repository = 'gc' and path = $1", [path]);
      await gc.query("commit");
      const out = await push;
      expect(out.status).toBe(400);
      expect(out.body).toContain("MANIFEST_BLOB_UNKNOWN");
      expect(await has("gc", "race", "manifests", out.digest)).toBe(false);
    } finally {
      await gc.end();
    }
  });

  it("keeps the newest N tags of each image and removes untagged manifests after a while", async () => {
    const bad = await s.call("PATCH", "/api/repositories/ret", { key, body: { untaggedAfter: "soon" } });
    expect(bad.status).toBe(400);
    expect((await s.call("PATCH", "/api/repositories/ret", { key, body: { keepTags: 2, untaggedAfter: "PT1H" } })).status).toBe(200);
    const config = await pushBlob("ret", "app", randomBytes(64));
    const digests: string[] = [];
    for (const tag of ["t1", "t2", "t3"]) {
      const layer = await pushBlob("ret", "app", randomBytes(100));
      const m = await pushManifest("ret", "app", tag, config, [layer]);
      expect(m.status).toBe(201);
      digests.push(m.digest);
      await db.query(`update artifacts.oci_tags set updated_at = now() - make_interval(mins => $1) where repository = 'ret' and tag = $2`, [10 - digests.length, tag]);
    }
    let run = await walk("images");
    expect(run.counts.retention).toMatchObject({ tagsRemoved: 1, untaggedRemoved: 0 });
    const tags = (await (await v2("GET", "ret/app/tags/list")).json()) as { tags: string[] };
    expect(tags.tags.sort()).toEqual(["t2", "t3"]);
    // t1's manifest is untagged now, but young: it stays until pushed over an hour ago.
    expect(await has("ret", "app", "manifests", digests[0]!)).toBe(true);
    await age("ret", 2);
    run = await walk("images");
    expect(run.counts.retention).toMatchObject({ untaggedRemoved: 1 });
    expect(await has("ret", "app", "manifests", digests[0]!)).toBe(false);
    expect(await has("ret", "app", "manifests", digests[1]!)).toBe(true);
    expect(await has("ret", "app", "manifests", digests[2]!)).toBe(true);
  });
});
