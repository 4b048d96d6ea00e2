import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeObjects, type StoreObjects } from "./store-objects.js";
import { startSuite, type Suite } from "./suite.js";
import { adminCaller, runWalk } from "./upstream.js";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const CONFIG = "application/vnd.oci.image.config.v1+json";
const LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";
const sha256 = (b: Buffer | string) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`nodes:${key}`).toString("base64")}` });
/** The reclaim grace of this deployment: short, so a walk in the test reaches blobs a push left a moment before. */
const GRACE_MS = 1000;

/**
 * The OCI registry on two nodes: two gateways, each in front of an artifacts process of its
 * own, on one database and one blob store (as behind a load balancer). Whatever one node
 * started, the other continues or sees at once: an upload session, a manifest, a tag, a token.
 */
describe("the OCI registry across nodes", () => {
  let s: Suite;
  /** Node B: a second artifacts process and a gateway in front of it. */
  let b: { url: string; stop: () => Promise<void> }[];
  let bUrl: string;
  let writer: string;
  let reader: string;
  let db: pg.Client;
  let objects: StoreObjects;
  let walks: Awaited<ReturnType<typeof adminCaller>>["call"];

  type Opts = { key?: string; headers?: Record<string, string>; body?: Buffer | string };
  const at = (base: () => string) => (method: string, path: string, opts: Opts = {}) =>
    fetch(`${base()}/v2/${path.replace(/^\/v2\//, "")}`, { method, headers: { ...(opts.key ? basic(opts.key) : {}), ...opts.headers }, body: opts.body, redirect: "manual" } as RequestInit);
  const A = at(() => s.gatewayUrl);
  const B = at(() => bUrl);
  const octets = { "content-type": "application/octet-stream" };
  const bytesOf = async (r: Response) => Buffer.from(await r.arrayBuffer());
  const errorsOf = async (r: Response) => ((await r.json()) as { errors: { code: string; message: string }[] }).errors;

  const pushBlob = async (node: typeof A, image: string, bytes: Buffer) => {
    const r = await node("POST", `oci/${image}/blobs/uploads/?digest=${sha256(bytes)}`, { key: writer, body: bytes, headers: octets });
    expect(r.status).toBe(201);
    return { digest: sha256(bytes), size: bytes.length };
  };
  const manifestOf = (config: { digest: string; size: number }, layers: { digest: string; size: number }[]) =>
    Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, ...config }, layers: layers.map((l) => ({ mediaType: LAYER, ...l })) }));
  const walk = (name: string) => runWalk(walks, name);

  beforeAll(async () => {
    s = await startSuite({ env: { SVC_STORAGE_RECLAIM_GRACE: `${GRACE_MS / 1000}s` } });
    const artifactsB = await s.startReplica("artifacts");
    const gatewayB = await s.startGateway({ SVC_ARTIFACTS_URL: artifactsB.url });
    b = [gatewayB, artifactsB];
    bUrl = gatewayB.url;
    await s.createRepository("oci", "oci");
    writer = (await s.mint({ label: "pusher", grants: [{ scope: "oci", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "puller", grants: [{ scope: "oci", tokens: ["read-only"] }] })).key;
    walks = (await adminCaller(s, "/api/walks", "walker")).call;
    expect((await walks("POST", "/api/walks", { name: "collect", schedule: "0 0 3 1 1 *", jobs: ["reclaim"] })).status).toBe(201);
    db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
    objects = storeObjects(s);
  }, 600_000);
  afterAll(async () => {
    objects?.close();
    await db?.end();
    for (const n of b ?? []) await n.stop();
    await s?.stop();
  });

  it("a chunked upload begun on one node, continued on both and closed on the other: the blob whole on both", async () => {
    const whole = randomBytes(300_000);
    const start = await A("POST", "oci/chunked/blobs/uploads/", { key: writer });
    expect(start.status).toBe(202);
    const location = start.headers.get("location")!;
    const first = await B("PATCH", location, { key: writer, body: whole.subarray(0, 100_000), headers: { ...octets, "content-range": "0-99999" } });
    expect(first.status).toBe(202);
    expect(first.headers.get("range")).toBe("0-99999");
    // The first node knows where the upload stands, and refuses a chunk out of order with it.
    const status = await A("GET", location, { key: writer });
    expect(status.status).toBe(204);
    expect(status.headers.get("range")).toBe("0-99999");
    const skipped = await A("PATCH", location, { key: writer, body: whole.subarray(200_000), headers: { ...octets, "content-range": "200000-299999" } });
    expect(skipped.status).toBe(416);
    expect(skipped.headers.get("range")).toBe("0-99999");
    expect((await A("PATCH", location, { key: writer, body: whole.subarray(100_000, 200_000), headers: octets })).status).toBe(202);
    const put = await B("PUT", `${location}?digest=${sha256(whole)}`, { key: writer, body: whole.subarray(200_000), headers: { ...octets, "content-range": "200000-299999" } });
    expect(put.status).toBe(201);
    for (const node of [A, B]) {
      const got = await node("GET", `oci/chunked/blobs/${sha256(whole)}`, { key: reader });
      expect(got.status).toBe(200);
      expect((await bytesOf(got)).equals(whole)).toBe(true);
    }
    // The session ended on both.
    expect((await errorsOf(await A("GET", location, { key: writer })))[0]!.code).toBe("BLOB_UPLOAD_UNKNOWN");
  });

  it("a manifest pushed through one node is pulled through the other at once; its tags are listed and its deletion seen from both", async () => {
    const config = await pushBlob(A, "app", randomBytes(64));
    const layer = await pushBlob(B, "app", randomBytes(4096));
    const body = manifestOf(config, [layer]);
    const pushed = await A("PUT", "oci/app/manifests/v1", { key: writer, body, headers: { "content-type": OCI_MANIFEST } });
    expect(pushed.status).toBe(201);
    for (const ref of ["v1", sha256(body)]) {
      const got = await B("GET", `oci/app/manifests/${ref}`, { key: reader, headers: { accept: OCI_MANIFEST } });
      expect(got.status).toBe(200);
      expect(got.headers.get("docker-content-digest")).toBe(sha256(body));
      expect((await bytesOf(got)).equals(body)).toBe(true);
    }
    expect((await B("PUT", "oci/app/manifests/v2", { key: writer, body, headers: { "content-type": OCI_MANIFEST } })).status).toBe(201);
    for (const node of [A, B]) expect((await (await node("GET", "oci/app/tags/list", { key: reader })).json()) as object).toEqual({ name: "oci/app", tags: ["v1", "v2"] });

    // A tag deleted on one node is gone on the other; the manifest deleted on the other, gone on the first.
    expect((await B("DELETE", "oci/app/manifests/v2", { key: writer })).status).toBe(202);
    expect((await (await A("GET", "oci/app/tags/list", { key: reader })).json()) as object).toEqual({ name: "oci/app", tags: ["v1"] });
    expect((await A("GET", "oci/app/manifests/v2", { key: reader })).status).toBe(404);
    expect((await A("DELETE", `oci/app/manifests/${sha256(body)}`, { key: writer })).status).toBe(202);
    const gone = await B("GET", `oci/app/manifests/${sha256(body)}`, { key: reader, headers: { accept: OCI_MANIFEST } });
    expect(gone.status).toBe(404);
    expect((await errorsOf(gone))[0]!.code).toBe("MANIFEST_UNKNOWN");
    expect((await B("GET", "oci/app/manifests/v1", { key: reader })).status).toBe(404);
  });

  it("a token minted by one gateway pushes and pulls through the other", async () => {
    const host = new URL(s.gatewayUrl).host;
    const minted = await fetch(`${s.gatewayUrl}/v2/token?service=${encodeURIComponent(host)}&scope=${encodeURIComponent("repository:oci/tok:pull,push")}`, { headers: basic(writer) });
    expect(minted.status).toBe(200);
    const { token } = (await minted.json()) as { token: string };
    const bytes = randomBytes(512);
    const bearer = { authorization: `Bearer ${token}` };
    expect((await B("POST", `oci/tok/blobs/uploads/?digest=${sha256(bytes)}`, { body: bytes, headers: { ...bearer, ...octets } })).status).toBe(201);
    const got = await B("GET", `oci/tok/blobs/${sha256(bytes)}`, { headers: bearer });
    expect(got.status).toBe(200);
    expect((await bytesOf(got)).equals(bytes)).toBe(true);
    // Its scope holds on the other node too: another image is not in it.
    expect((await B("GET", `oci/other/blobs/${sha256(bytes)}`, { headers: bearer })).status).toBe(401);
  });

  it("a reclaim walk while a push is under way on the other node keeps its blobs and its upload's chunks; an abandoned upload's chunks go", async () => {
    // On node B: the config and one layer pushed, a second layer's upload begun with one chunk.
    const config = await pushBlob(B, "busy", randomBytes(64));
    const small = await pushBlob(B, "busy", randomBytes(2048));
    const big = randomBytes(200_000);
    const start = await B("POST", "oci/busy/blobs/uploads/", { key: writer });
    const location = start.headers.get("location")!;
    expect((await B("PATCH", location, { key: writer, body: big.subarray(0, 100_000), headers: octets })).status).toBe(202);
    // An upload abandoned on node A a while ago (its session idle past the half hour an upload may rest).
    const lost = randomBytes(10_000);
    const abandoned = (await A("POST", "oci/lost/blobs/uploads/", { key: writer })).headers.get("location")!;
    expect((await A("PATCH", abandoned, { key: writer, body: lost, headers: octets })).status).toBe(202);
    await db.query("update artifacts.oci_uploads set updated_at = now() - interval '2 hours' where id = $1", [abandoned.split("/").pop()]);

    // Everything is older than the grace now; the walk (the walker, through node A) collects.
    await new Promise((r) => setTimeout(r, GRACE_MS + 500));
    const run = await walk("collect");
    expect(run.outcome).toBe("succeeded");
    expect(await objects.hasBlob(sha256(lost).slice(7))).toBe(false);
    expect(await objects.hasBlob(sha256(big.subarray(0, 100_000)).slice(7))).toBe(true);

    // The push goes on through node A: its upload closes whole, and the manifest finds every blob.
    const put = await A("PUT", `${location}?digest=${sha256(big)}`, { key: writer, body: big.subarray(100_000), headers: octets });
    expect(put.status).toBe(201);
    const layer = { digest: sha256(big), size: big.length };
    const body = manifestOf(config, [small, layer]);
    expect((await A("PUT", "oci/busy/manifests/v1", { key: writer, body, headers: { "content-type": OCI_MANIFEST } })).status).toBe(201);
    const got = await B("GET", `oci/busy/blobs/${layer.digest}`, { key: reader });
    expect((await bytesOf(got)).equals(big)).toBe(true);
    expect((await B("HEAD", `oci/busy/blobs/${small.digest}`, { key: reader })).status).toBe(200);
  });
});
