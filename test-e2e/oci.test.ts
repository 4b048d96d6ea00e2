import { createHash, createHmac, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureDebianPackages } from "@svc/devstack";
import { tarOf } from "../bench/npm-packages.js";
import { run, type Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
const CONFIG = "application/vnd.oci.image.config.v1+json";
const LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";

const sha256 = (b: Buffer | string) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const sha512 = (b: Buffer | string) => `sha512:${createHash("sha512").update(b).digest("hex")}`;
const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`skopeo:${key}`).toString("base64")}` });

/** An OCI image layout written by hand (no daemon): one layer, its config, a manifest tagged `tag`. */
function imageLayout(dir: string, tag: string, content: string) {
  mkdirSync(join(dir, "blobs", "sha256"), { recursive: true });
  const put = (b: Buffer) => {
    const d = sha256(b);
    writeFileSync(join(dir, "blobs", "sha256", d.slice(7)), b);
    return { digest: d, size: b.length };
  };
  // A tar of one file (the bench's ustar writer).
  const tar = tarOf({ "hello.txt": content });
  // Compressed, as images are: skopeo would compress a plain tar on its way, and the copy would differ.
  const layerBytes = gzipSync(tar);
  const layer = put(layerBytes);
  const config = put(Buffer.from(JSON.stringify({ architecture: "amd64", os: "linux", config: {}, rootfs: { type: "layers", diff_ids: [sha256(tar)] } })));
  const manifestBytes = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, ...config }, layers: [{ mediaType: LAYER, ...layer }] }));
  const manifest = put(manifestBytes);
  writeFileSync(join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(join(dir, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: OCI_MANIFEST, ...manifest, annotations: { "org.opencontainers.image.ref.name": tag } }] }));
  return { layer, config, manifest, manifestBytes, layerBytes };
}

/** The bytes of each blob of a layout, by digest. */
function layoutBlobs(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const f of readdirSync(join(dir, "blobs", "sha256"))) out.set(`sha256:${f}`, readFileSync(join(dir, "blobs", "sha256", f)));
  return out;
}

/**
 * The OCI registry at /v2/ through the gateway: skopeo (Debian's) pushing an image written here
 * as an OCI layout and copying it back, and the distribution API spoken directly for what skopeo
 * does not show (chunked uploads, errors, paging, referrers).
 */
describe("the OCI registry at /v2/", () => {
  let s: Suite;
  let work: string;
  let writer: string;
  let reader: string;
  let host: string;
  const env = () => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(work, "home") });
  const skopeo = (args: string[]) => run("skopeo", ["--insecure-policy", ...args], { cwd: work, env: env() });
  const ok = (r: Run) => {
    if (r.code !== 0) throw new Error(`skopeo failed (${r.code}):\n${r.output}`);
    return r;
  };
  const v2 = (method: string, path: string, opts: { key?: string; headers?: Record<string, string>; body?: Buffer | string } = {}) =>
    fetch(`${s.gatewayUrl}/v2/${path}`, { method, headers: { ...(opts.key ? basic(opts.key) : {}), ...opts.headers }, body: opts.body, redirect: "manual" } as RequestInit);
  const errorsOf = async (r: Response) => ((await r.json()) as { errors: { code: string; message: string }[] }).errors;

  beforeAll(async () => {
    [s] = await Promise.all([startSuite(), ensureDebianPackages(["skopeo"])]);
    work = mkdtempSync(join(inject("dataDir"), "oci-"));
    mkdirSync(join(work, "home"), { recursive: true });
    await s.createRepository("oci", "oci");
    await s.createRepository("files", "raw");
    writer = (await s.mint({ label: "pusher", grants: [{ scope: "oci", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "puller", grants: [{ scope: "oci", tokens: ["read-only"] }] })).key;
    host = new URL(s.gatewayUrl).host;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("the ping asks for credentials with a Bearer then a Basic challenge and an OCI error, and answers a key", async () => {
    const anonymous = await v2("GET", "");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe(`Bearer realm="http://${host}/v2/token",service="${host}", Basic realm="artifact repository", charset="UTF-8"`);
    expect((await errorsOf(anonymous))[0]!.code).toBe("UNAUTHORIZED");
    const known = await v2("GET", "", { key: reader });
    expect(known.status).toBe(200);
    expect(known.headers.get("docker-distribution-api-version")).toBe("registry/2.0");
  });

  it("skopeo pushes an image, copies it back byte for byte, inspects it, lists its tags and deletes it", async () => {
    const src = join(work, "src");
    const image = imageLayout(src, "v1", "hello from the registry\n");
    const ref = `docker://${host}/oci/team/app`;
    ok(await skopeo(["copy", "--dest-tls-verify=false", "--dest-creds", `skopeo:${writer}`, `oci:${src}:v1`, `${ref}:v1`]));
    ok(await skopeo(["copy", "--dest-tls-verify=false", "--dest-creds", `skopeo:${writer}`, `oci:${src}:v1`, `${ref}:latest`]));

    const back = join(work, "back");
    ok(await skopeo(["copy", "--src-tls-verify=false", "--src-creds", `skopeo:${reader}`, `${ref}:v1`, `oci:${back}:v1`]));
    const pushed = layoutBlobs(src);
    const pulled = layoutBlobs(back);
    expect([...pulled.keys()].sort()).toEqual([...pushed.keys()].sort());
    for (const [d, bytes] of pushed) expect(pulled.get(d)!.equals(bytes)).toBe(true);

    const inspect = JSON.parse(ok(await skopeo(["inspect", "--tls-verify=false", "--creds", `skopeo:${reader}`, `${ref}:v1`])).stdout) as { Digest: string; Layers: string[] };
    expect(inspect.Digest).toBe(image.manifest.digest);
    expect(inspect.Layers).toEqual([image.layer.digest]);
    const tags = JSON.parse(ok(await skopeo(["list-tags", "--tls-verify=false", "--creds", `skopeo:${reader}`, ref])).stdout) as { Tags: string[] };
    expect(tags.Tags.sort()).toEqual(["latest", "v1"]);

    // A reader may pull but not push.
    const refused = await skopeo(["copy", "--dest-tls-verify=false", "--dest-creds", `skopeo:${reader}`, `oci:${src}:v1`, `${ref}:v2`]);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/denied|unauthorized|403/i);

    ok(await skopeo(["delete", "--tls-verify=false", "--creds", `skopeo:${writer}`, `${ref}:v1`]));
    const gone = await v2("GET", `oci/team/app/manifests/${image.manifest.digest}`, { key: reader, headers: { accept: OCI_MANIFEST } });
    expect(gone.status).toBe(404);
    expect((await errorsOf(gone))[0]!.code).toBe("MANIFEST_UNKNOWN");
    // Deleting the manifest dropped every tag naming it: `latest` too, and the image lists none.
    const latest = await v2("GET", "oci/team/app/manifests/latest", { key: reader });
    expect((await errorsOf(latest))[0]!.code).toBe("MANIFEST_UNKNOWN");
    expect((await errorsOf(await v2("GET", "oci/team/app/tags/list", { key: reader })))[0]!.code).toBe("NAME_UNKNOWN");
  }, 300_000);

  /** Pushes a blob in one POST (?digest=). */
  const pushBlob = async (name: string, bytes: Buffer, digest = sha256(bytes)) => {
    const r = await v2("POST", `oci/${name}/blobs/uploads/?digest=${digest}`, { key: writer, body: bytes, headers: { "content-type": "application/octet-stream" } });
    expect(r.status).toBe(201);
    expect(r.headers.get("docker-content-digest")).toBe(digest);
    return digest;
  };
  const pushManifest = (name: string, reference: string, doc: object, type = OCI_MANIFEST) =>
    v2("PUT", `oci/${name}/manifests/${reference}`, { key: writer, body: JSON.stringify(doc), headers: { "content-type": type } });

  it("a chunked upload: PATCH with and without Content-Range, an out-of-order chunk 416 with the upload's Range, status, then PUT with the digest", async () => {
    const whole = randomBytes(300_000);
    const start = await v2("POST", "oci/chunks/blobs/uploads/", { key: writer });
    expect(start.status).toBe(202);
    expect(start.headers.get("range")).toBe("0-0");
    let location = start.headers.get("location")!;
    const at = (loc: string) => loc.replace(/^\/v2\//, "");

    const first = await v2("PATCH", at(location), { key: writer, body: whole.subarray(0, 100_000), headers: { "content-type": "application/octet-stream", "content-range": "0-99999" } });
    expect(first.status).toBe(202);
    expect(first.headers.get("range")).toBe("0-99999");
    location = first.headers.get("location")!;

    const skipped = await v2("PATCH", at(location), { key: writer, body: whole.subarray(200_000), headers: { "content-type": "application/octet-stream", "content-range": "200000-299999" } });
    expect(skipped.status).toBe(416);
    expect(skipped.headers.get("range")).toBe("0-99999");
    expect((await errorsOf(skipped))[0]!.code).toBe("BLOB_UPLOAD_INVALID");

    const second = await v2("PATCH", at(location), { key: writer, body: whole.subarray(100_000, 200_000), headers: { "content-type": "application/octet-stream" } });
    expect(second.status).toBe(202);
    expect(second.headers.get("range")).toBe("0-199999");

    const status = await v2("GET", at(location), { key: writer });
    expect(status.status).toBe(204);
    expect(status.headers.get("range")).toBe("0-199999");

    const wrong = await v2("PUT", `${at(location)}?digest=${sha256("not this")}`, { key: writer, body: whole.subarray(200_000), headers: { "content-type": "application/octet-stream", "content-range": "200000-299999" } });
    expect(wrong.status).toBe(400);
    expect((await errorsOf(wrong))[0]!.code).toBe("DIGEST_INVALID");

    const done = await v2("PUT", `${at(location)}?digest=${sha256(whole)}`, { key: writer });
    expect(done.status).toBe(201);
    expect(done.headers.get("location")).toBe(`/v2/oci/chunks/blobs/${sha256(whole)}`);
    const got = await v2("GET", `oci/chunks/blobs/${sha256(whole)}`, { key: reader });
    expect(Buffer.from(await got.arrayBuffer()).equals(whole)).toBe(true);
    const part = await v2("GET", `oci/chunks/blobs/${sha256(whole)}`, { key: reader, headers: { range: "bytes=10-19" } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(whole.subarray(10, 20))).toBe(true);

    // The session is over; a cancelled one answers BLOB_UPLOAD_UNKNOWN.
    expect((await v2("GET", at(location), { key: writer })).status).toBe(404);
    const other = (await v2("POST", "oci/chunks/blobs/uploads/", { key: writer })).headers.get("location")!;
    expect((await v2("DELETE", at(other), { key: writer })).status).toBe(204);
    const cancelled = await v2("PATCH", at(other), { key: writer, body: "x", headers: { "content-type": "application/octet-stream" } });
    expect(cancelled.status).toBe(404);
    expect((await errorsOf(cancelled))[0]!.code).toBe("BLOB_UPLOAD_UNKNOWN");
  });

  it("two chunks sent at once for the same place: one is appended, the other refused 416 with the upload's Range", async () => {
    const loc = (await v2("POST", "oci/racing/blobs/uploads/", { key: writer })).headers.get("location")!.replace(/^\/v2\//, "");
    const chunk = (fill: number) => v2("PATCH", loc, { key: writer, body: Buffer.alloc(50_000, fill), headers: { "content-type": "application/octet-stream", "content-range": "0-49999" } });
    const answers = await Promise.all([chunk(1), chunk(2)]);
    expect(answers.map((r) => r.status).sort()).toEqual([202, 416]);
    expect(answers.map((r) => r.headers.get("range"))).toEqual(["0-49999", "0-49999"]);
    const won = answers.find((r) => r.status === 202) === answers[0] ? 1 : 2;
    const done = await v2("PUT", `${loc}?digest=${sha256(Buffer.alloc(50_000, won))}`, { key: writer });
    expect(done.status).toBe(201);
  });

  it("sha512 blobs; a manifest refers only to what the image holds (MANIFEST_BLOB_UNKNOWN), its content type echoed, HEAD and GET by tag and digest", async () => {
    const layer = randomBytes(1000);
    const l512 = await pushBlob("refs", layer, sha512(layer));
    expect((await v2("HEAD", `oci/refs/blobs/${l512}`, { key: reader })).headers.get("content-length")).toBe("1000");
    const config = Buffer.from("{}");
    const missing = await pushManifest("refs", "v1", { schemaVersion: 2, mediaType: DOCKER_MANIFEST, config: { mediaType: "application/vnd.docker.container.image.v1+json", digest: sha256(config), size: 2 }, layers: [{ mediaType: LAYER, digest: l512, size: 1000 }] }, DOCKER_MANIFEST);
    expect(missing.status).toBe(400);
    const [e] = await errorsOf(missing);
    expect(e!.code).toBe("MANIFEST_BLOB_UNKNOWN");
    expect(e!.message).toContain(sha256(config));

    await pushBlob("refs", config);
    const doc = { schemaVersion: 2, mediaType: DOCKER_MANIFEST, config: { mediaType: "application/vnd.docker.container.image.v1+json", digest: sha256(config), size: 2 }, layers: [{ mediaType: LAYER, digest: l512, size: 1000 }] };
    const put = await pushManifest("refs", "v1", doc, DOCKER_MANIFEST);
    expect(put.status).toBe(201);
    const digest = sha256(JSON.stringify(doc));
    expect(put.headers.get("docker-content-digest")).toBe(digest);
    for (const reference of ["v1", digest]) {
      const head = await v2("HEAD", `oci/refs/manifests/${reference}`, { key: reader });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-type")).toBe(DOCKER_MANIFEST);
      expect(head.headers.get("docker-content-digest")).toBe(digest);
      const get = await v2("GET", `oci/refs/manifests/${reference}`, { key: reader });
      expect(await get.text()).toBe(JSON.stringify(doc));
    }

    // An index whose child manifest the image lacks is refused; with the child there it is stored.
    const child = { mediaType: DOCKER_MANIFEST, digest, size: JSON.stringify(doc).length, platform: { architecture: "amd64", os: "linux" } };
    const ghost = { ...child, digest: sha256("no such manifest") };
    expect((await errorsOf(await pushManifest("refs", "multi", { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [child, ghost] }, OCI_INDEX)))[0]!.code).toBe("MANIFEST_BLOB_UNKNOWN");
    const index = await pushManifest("refs", "multi", { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [child] }, OCI_INDEX);
    expect(index.status).toBe(201);
    expect((await v2("GET", "oci/refs/manifests/multi", { key: reader })).headers.get("content-type")).toBe(OCI_INDEX);

    const bad = await pushManifest("refs", "v2", { schemaVersion: 2 }, "application/vnd.example+json");
    expect((await errorsOf(bad))[0]!.code).toBe("MANIFEST_INVALID");
  });

  it("tags list and catalog page with n, last and Link", async () => {
    const config = Buffer.from('{"paging":true}');
    await pushBlob("paged", config);
    const doc = { schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, digest: sha256(config), size: config.length }, layers: [] };
    for (const tag of ["c", "a", "b", "d"]) expect((await pushManifest("paged", tag, doc)).status).toBe(201);
    const first = await v2("GET", "oci/paged/tags/list?n=2", { key: reader });
    expect(await first.json()).toEqual({ name: "oci/paged", tags: ["a", "b"] });
    expect(first.headers.get("link")).toBe('</v2/oci/paged/tags/list?n=2&last=b>; rel="next"');
    const next = await v2("GET", "oci/paged/tags/list?n=2&last=b", { key: reader });
    expect(((await next.json()) as { tags: string[] }).tags).toEqual(["c", "d"]);
    expect((await errorsOf(await v2("GET", "oci/nothing-here/tags/list", { key: reader })))[0]!.code).toBe("NAME_UNKNOWN");

    // The catalog lists every repository's images: a key over * only.
    const admin = (await s.mint({ label: "catalog", grants: [{ scope: "*", tokens: ["read-only"] }] })).key;
    expect((await v2("GET", "_catalog", { key: reader })).status).toBe(403);
    const cat = await v2("GET", "_catalog?n=1&last=oci/chunks", { key: admin });
    expect(await cat.json()).toEqual({ repositories: ["oci/paged"] });
    expect(cat.headers.get("link")).toBe('</v2/_catalog?n=1&last=oci%2Fpaged>; rel="next"');
  });

  it("referrers: a manifest with a subject is listed, filtered by artifactType, and its PUT answers OCI-Subject", async () => {
    const config = Buffer.from('{"subject":"image"}');
    await pushBlob("signed", config);
    const image = { schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, digest: sha256(config), size: config.length }, layers: [] };
    expect((await pushManifest("signed", "v1", image)).status).toBe(201);
    const subject = { mediaType: OCI_MANIFEST, digest: sha256(JSON.stringify(image)), size: JSON.stringify(image).length };
    const empty = Buffer.from("{}");
    await pushBlob("signed", empty);
    const sig = { schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: "application/vnd.example.signature", config: { mediaType: "application/vnd.oci.empty.v1+json", digest: sha256(empty), size: 2 }, layers: [], subject, annotations: { who: "ci" } };
    const sbom = { ...sig, artifactType: "application/vnd.example.sbom" };
    const put = await pushManifest("signed", sha256(JSON.stringify(sig)), sig);
    expect(put.status).toBe(201);
    expect(put.headers.get("oci-subject")).toBe(subject.digest);
    expect((await pushManifest("signed", sha256(JSON.stringify(sbom)), sbom)).status).toBe(201);

    const all = await v2("GET", `oci/signed/referrers/${subject.digest}`, { key: reader });
    expect(all.headers.get("content-type")).toBe(OCI_INDEX);
    const listed = (await all.json()) as { manifests: { digest: string; artifactType: string; annotations: Record<string, string> }[] };
    expect(listed.manifests.map((m) => m.artifactType).sort()).toEqual(["application/vnd.example.sbom", "application/vnd.example.signature"]);
    const only = await v2("GET", `oci/signed/referrers/${subject.digest}?artifactType=application/vnd.example.signature`, { key: reader });
    expect(only.headers.get("oci-filters-applied")).toBe("artifactType");
    expect(((await only.json()) as typeof listed).manifests).toEqual([{ mediaType: OCI_MANIFEST, digest: sha256(JSON.stringify(sig)), size: JSON.stringify(sig).length, artifactType: "application/vnd.example.signature", annotations: { who: "ci" } }]);
  });

  it("a pushed and a deleted manifest are artifact events with the image and the digest", async () => {
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === "oci" && e.path.startsWith("evented/manifests/"));
    try {
      const config = Buffer.from('{"evented":true}');
      await pushBlob("evented", config);
      const doc = { schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, digest: sha256(config), size: config.length }, layers: [] };
      const digest = sha256(JSON.stringify(doc));
      expect((await pushManifest("evented", "v1", doc)).status).toBe(201);
      expect((await v2("DELETE", `oci/evented/manifests/${digest}`, { key: writer })).status).toBe(202);
      const got = await events.until("the push and the removal", (es) => es.length >= 2);
      const pkg = { format: "oci", name: "evented", version: digest, file: `evented/manifests/${digest}` };
      expect(got.map((e) => [e.kind, e.digest, e.package])).toEqual([
        ["artifact.published", digest, pkg],
        ["artifact.removed", digest, pkg],
      ]);
    } finally {
      await events.close();
    }
  });

  it("immutable tags: a pushed tag is refused a move and a removal (DENIED), the same manifest pushed again is fine", async () => {
    const admin = (await s.mint({ label: "oci-admin", grants: [{ scope: "*", tokens: ["*"] }] })).key;
    const set = await s.call("PUT", "/api/repositories/oci/oci", { key: admin, body: { immutableTags: true } });
    expect(set.status).toBe(200);
    try {
      const config = Buffer.from('{"immutable":true}');
      await pushBlob("pinned", config);
      const doc = (n: number) => ({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: CONFIG, digest: sha256(config), size: config.length }, layers: [], annotations: { n: String(n) } });
      expect((await pushManifest("pinned", "1.0", doc(1))).status).toBe(201);
      expect((await pushManifest("pinned", "1.0", doc(1))).status).toBe(201);
      const moved = await pushManifest("pinned", "1.0", doc(2));
      expect(moved.status).toBe(403);
      const [e] = await errorsOf(moved);
      expect(e!.code).toBe("DENIED");
      expect(e!.message).toContain("immutable");
      expect((await v2("GET", "oci/pinned/manifests/1.0", { key: reader }).then((r) => r.headers.get("docker-content-digest")))).toBe(sha256(JSON.stringify(doc(1))));
      expect((await errorsOf(await v2("DELETE", "oci/pinned/manifests/1.0", { key: writer })))[0]!.code).toBe("DENIED");
      expect((await v2("DELETE", `oci/pinned/manifests/${sha256(JSON.stringify(doc(1)))}`, { key: writer })).status).toBe(403);
      // An untagged manifest may still go.
      expect((await pushManifest("pinned", sha256(JSON.stringify(doc(3))), doc(3))).status).toBe(201);
      expect((await v2("DELETE", `oci/pinned/manifests/${sha256(JSON.stringify(doc(3)))}`, { key: writer })).status).toBe(202);
    } finally {
      await s.call("PUT", "/api/repositories/oci/oci", { key: admin, body: { immutableTags: false } });
    }
    expect(await (await s.call("GET", "/api/repositories/files/oci", { key: admin })).json()).toMatchObject({ field: "name" });
  });

  it("immutableTags is set at creation (POST /api/repositories) and with PATCH /api/repositories/<name>, shown with the repository, and refused for another format", async () => {
    const admin = (await s.mint({ label: "oci-admin-2", grants: [{ scope: "*", tokens: ["*"] }] })).key;
    const made = await s.call("POST", "/api/repositories", { key: admin, body: { name: "oci-pinned", format: "oci", immutableTags: true } });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ name: "oci-pinned", format: "oci", immutableTags: true });
    expect(await (await s.call("GET", "/api/repositories/oci-pinned", { key: admin })).json()).toMatchObject({ immutableTags: true });
    expect(await (await s.call("GET", "/api/repositories/oci-pinned/oci", { key: admin })).json()).toEqual({ immutableTags: true });
    const patched = await s.call("PATCH", "/api/repositories/oci-pinned", { key: admin, body: { immutableTags: false } });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ immutableTags: false });
    expect(await (await s.call("GET", "/api/repositories/oci-pinned/oci", { key: admin })).json()).toEqual({ immutableTags: false });
    // Another format's repository: refused, naming the field, and nothing made.
    const raw = await s.call("POST", "/api/repositories", { key: admin, body: { name: "raw-pinned", format: "raw", immutableTags: true } });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ field: "immutableTags" });
    expect((await s.call("GET", "/api/repositories/raw-pinned", { key: admin })).status).toBe(404);
    expect((await s.call("PATCH", "/api/repositories/files", { key: admin, body: { immutableTags: true } })).status).toBe(400);
  });

  it("refusals in the OCI error body: a repository of another format, a key without the right, a blob deleted", async () => {
    const other = await v2("GET", "files/app/tags/list", { key: writer });
    expect(other.status).toBe(403);
    expect((await errorsOf(other))[0]!.code).toBe("DENIED");
    const raw = await v2("GET", "files/app/tags/list", { key: (await s.mint({ label: "all", grants: [{ scope: "*", tokens: ["read-only"] }] })).key });
    expect(raw.status).toBe(404);
    expect((await errorsOf(raw))[0]!.code).toBe("NAME_UNKNOWN");
    const blob = await pushBlob("gone", Buffer.from("to be deleted"));
    expect((await v2("DELETE", `oci/gone/blobs/${blob}`, { key: writer })).status).toBe(202);
    const gone = await v2("GET", `oci/gone/blobs/${blob}`, { key: reader });
    expect(gone.status).toBe(404);
    expect((await errorsOf(gone))[0]!.code).toBe("BLOB_UNKNOWN");
  });

  describe("the token flow and cross-repository mounts", () => {
    type Token = { token: string; access_token: string; expires_in: number; issued_at: string };
    const tokenFor = async (scope: string, key?: string) => {
      const r = await fetch(`${s.gatewayUrl}/v2/token?service=${encodeURIComponent(host)}&scope=${encodeURIComponent(scope)}`, { headers: key ? basic(key) : {} });
      expect(r.status).toBe(200);
      return (await r.json()) as Token;
    };
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    /** Pushes one blob in a single POST, as `headers` allow. */
    const pushBlob = (image: string, bytes: Buffer, headers: Record<string, string>) =>
      v2("POST", `${image}/blobs/uploads/?digest=${sha256(bytes)}`, { headers: { ...headers, "content-type": "application/octet-stream" }, body: bytes });

    it("a 401 on an image names the token endpoint and the scope the request needs", async () => {
      const pull = await v2("GET", "oci/tok/app/tags/list");
      expect(pull.status).toBe(401);
      expect(pull.headers.get("www-authenticate")).toMatch(new RegExp(`^Bearer realm="http://${host}/v2/token",service="${host}",scope="repository:oci/tok/app:pull", Basic `));
      const push = await v2("POST", "oci/tok/app/blobs/uploads/");
      expect(push.headers.get("www-authenticate")).toContain('scope="repository:oci/tok/app:pull,push"');
    });

    it("a key exchanged for a token: pushes and pulls with it, within the scopes asked and held", async () => {
      const w = await tokenFor("repository:oci/tok/app:pull,push", writer);
      expect(w.access_token).toBe(w.token);
      expect(w.expires_in).toBe(300);
      expect(Date.parse(w.issued_at)).toBeGreaterThan(Date.now() - 60_000);
      const bytes = randomBytes(512);
      expect((await pushBlob("oci/tok/app", bytes, bearer(w.token))).status).toBe(201);

      // The reader asked for push too, and holds only read: its token pulls, and a push with it is
      // refused in the OCI error body as with Basic (DENIED, naming the right: no token would help).
      const r = await tokenFor("repository:oci/tok/app:pull,push", reader);
      const got = await v2("GET", `oci/tok/app/blobs/${sha256(bytes)}`, { headers: bearer(r.token) });
      expect(got.status).toBe(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
      const refused = await pushBlob("oci/tok/app", randomBytes(64), bearer(r.token));
      expect(refused.status).toBe(403);
      expect((await errorsOf(refused))[0]).toMatchObject({ code: "DENIED", message: expect.stringMatching(/^this key does not hold repository:write on oci/) });
      // A token asked for pull only, of a key that may push: its push is answered with the challenge, for a new token.
      const pullOnly = await tokenFor("repository:oci/tok/app:pull", writer);
      const challenged = await pushBlob("oci/tok/app", randomBytes(64), bearer(pullOnly.token));
      expect(challenged.status).toBe(401);
      expect(challenged.headers.get("www-authenticate")).toContain('scope="repository:oci/tok/app:pull,push"');
      expect((await errorsOf(challenged))[0]!.code).toBe("UNAUTHORIZED");
      // Nor does it reach another image, though the key would.
      expect((await v2("GET", `oci/tok/other/blobs/${sha256(bytes)}`, { headers: bearer(r.token) })).status).toBe(401);
      // A token is for /v2/ only.
      expect((await fetch(`${s.gatewayUrl}/repository/files/x.txt`, { headers: bearer(w.token) })).status).toBe(401);
      // Basic with the key still works beside it.
      expect((await v2("GET", `oci/tok/app/blobs/${sha256(bytes)}`, { key: reader })).status).toBe(200);
    });

    it("the catalog with a token: its 401 names registry:catalog:*, which a reader of every repository gets and lists it with", async () => {
      const challenge = await v2("GET", "_catalog");
      expect(challenge.status).toBe(401);
      expect(challenge.headers.get("www-authenticate")).toContain('scope="registry:catalog:*"');
      const all = await tokenFor("registry:catalog:*", s.bootstrapKey);
      const listed = await v2("GET", "_catalog?n=1000", { headers: bearer(all.token) });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { repositories: string[] }).repositories).toContain("oci/paged");
      // A key reading one repository only is given no catalog scope: its token is refused the catalog, naming the right it lacks.
      const some = await tokenFor("registry:catalog:*", reader);
      const refused = await v2("GET", "_catalog", { headers: bearer(some.token) });
      expect(refused.status).toBe(403);
      expect((await errorsOf(refused))[0]).toMatchObject({ code: "DENIED", message: expect.stringMatching(/^this key does not hold repository:read on \*/) });
    });

    it("a forged, an expired, or an anonymous token is refused what it may not do", async () => {
      const bytes = randomBytes(256);
      expect((await pushBlob("oci/tok/forged", bytes, basic(writer))).status).toBe(201);
      const path = `oci/tok/forged/blobs/${sha256(bytes)}`;
      const r = await tokenFor("repository:oci/tok/forged:pull", reader);
      // Widened to push, keeping the signature: refused.
      const [body, sig] = r.token.slice("svcot_".length).split(".");
      const claims = JSON.parse(Buffer.from(body!, "base64url").toString()) as { exp: number; scopes: { push: boolean }[] };
      const widened = `svcot_${Buffer.from(JSON.stringify({ ...claims, scopes: claims.scopes.map((c) => ({ ...c, push: true })) })).toString("base64url")}.${sig}`;
      const forged = await pushBlob("oci/tok/forged", randomBytes(64), bearer(widened));
      expect(forged.status).toBe(401);
      expect((await errorsOf(forged))[0]!.message).toMatch(/not valid here or has expired/);
      // Signed with the deployment's key, but expired.
      const key = createHmac("sha256", s.internalSecret).update("svc oci token v1").digest();
      const old = Buffer.from(JSON.stringify({ ...claims, exp: Math.floor(Date.now() / 1000) - 1 })).toString("base64url");
      const expired = `svcot_${old}.${createHmac("sha256", key).update(old).digest("base64url")}`;
      expect((await v2("GET", path, { headers: bearer(expired) })).status).toBe(401);
      expect((await v2("GET", path, { headers: bearer(r.token) })).status).toBe(200);
      // No credentials: an anonymous token, holding only what svc.anonymous-rights allows (nothing here).
      const anonymous = await tokenFor("repository:oci/tok/forged:pull");
      expect((await v2("GET", path, { headers: bearer(anonymous.token) })).status).toBe(401);
      // A password that is no key gets no token.
      const wrong = await fetch(`${s.gatewayUrl}/v2/token?scope=repository:oci/tok/forged:pull`, { headers: basic("not-a-key") });
      expect(wrong.status).toBe(401);
    });

    it("a mount from a readable source is made without the bytes (201); from an unreadable one it is a plain upload (202)", async () => {
      const bytes = randomBytes(2048);
      const digest = sha256(bytes);
      expect((await pushBlob("oci/mount/base", bytes, basic(writer))).status).toBe(201);
      const mounted = await v2("POST", `oci/mount/app/blobs/uploads/?mount=${digest}&from=oci/mount/base`, { key: writer });
      expect(mounted.status).toBe(201);
      expect(mounted.headers.get("location")).toBe(`/v2/oci/mount/app/blobs/${digest}`);
      expect(mounted.headers.get("docker-content-digest")).toBe(digest);
      const got = await v2("GET", `oci/mount/app/blobs/${digest}`, { key: reader });
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
      // With a token: the source's pull must be in it too.
      const both = await tokenFor("repository:oci/mount/tok:pull,push repository:oci/mount/base:pull", writer);
      expect((await v2("POST", `oci/mount/tok/blobs/uploads/?mount=${digest}&from=oci/mount/base`, { headers: bearer(both.token) })).status).toBe(201);
      const targetOnly = await tokenFor("repository:oci/mount/tok2:pull,push", writer);
      expect((await v2("POST", `oci/mount/tok2/blobs/uploads/?mount=${digest}&from=oci/mount/base`, { headers: bearer(targetOnly.token) })).status).toBe(202);

      // A source the writer may not read, in a repository of its own.
      await s.createRepository("ocisecret", "oci");
      expect((await pushBlob("ocisecret/base", bytes, basic(s.bootstrapKey))).status).toBe(201);
      const plain = await v2("POST", `oci/mount/other/blobs/uploads/?mount=${digest}&from=ocisecret/base`, { key: writer });
      expect(plain.status).toBe(202);
      expect(plain.headers.get("location")).toMatch(/^\/v2\/oci\/mount\/other\/blobs\/uploads\/[0-9a-f-]{36}$/);
      // A client's own claim that it may read the source changes nothing.
      const claimed = await v2("POST", `oci/mount/other/blobs/uploads/?mount=${digest}&from=ocisecret/base`, { key: writer, headers: { "x-svc-mount-readable": "ocisecret/base" } });
      expect(claimed.status).toBe(202);
      // A source without the blob: a plain upload too.
      expect((await v2("POST", `oci/mount/other/blobs/uploads/?mount=${sha256("absent")}&from=oci/mount/base`, { key: writer })).status).toBe(202);
      // A mount counts against the target repository's quota as the blob's push would: refused, nothing indexed.
      expect((await s.call("POST", "/api/repositories", { key: s.bootstrapKey, body: { name: "ociquota", format: "oci", quotaBytes: 1024 } })).status).toBe(201);
      const over = await v2("POST", `ociquota/app/blobs/uploads/?mount=${digest}&from=oci/mount/base`, { key: s.bootstrapKey });
      expect(over.status).toBe(413);
      expect(await errorsOf(over)).toEqual([expect.objectContaining({ code: "SIZE_INVALID", message: expect.stringContaining("over its storage quota") })]);
      expect((await v2("HEAD", `ociquota/app/blobs/${digest}`, { key: s.bootstrapKey })).status).toBe(404);
      const usage = (await (await s.call("GET", "/api/repositories/ociquota", { key: s.bootstrapKey })).json()) as { usedBytes: number };
      expect(usage.usedBytes).toBe(0);
    });
  });
});
