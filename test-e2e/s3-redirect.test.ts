import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureDebianPackages, startObjectStore, type ObjectStore } from "@svc/devstack";
import { tarOf } from "../bench/npm-packages.js";
import { ensureClients, expectOk, run, scratchEnv, type Clients } from "./npm-clients.js";
import { ensurePythonClients, pythonEnv, uploadForm, type PythonClients } from "./pypi-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually, systemCall } from "./upstream.js";

/**
 * svc.storage.s3.redirect=true on a real RADOS Gateway: an artifact GET is answered, after every
 * check a download has, with a 307 to a short-lived signed URL of its object; the object store
 * then serves the exact bytes, inert as the server would have served them. What the server
 * answers itself (errors, 304, HEAD, its own validators) stays with it; npm follows the redirect.
 * docs/install/s3-redirect.md.
 */
describe("svc.storage.s3.redirect: artifact GETs answered with a signed URL of the bucket", () => {
  let os: ObjectStore;
  let s: Suite;
  let clients: Clients;
  let py: PythonClients;
  let reader: string;
  let nothing: string;
  const dataDir = mkdtempSync(join(tmpdir(), "svc-s3r-"));
  const bucket = "svc-redirect";
  const endpoint = () => os.endpoint.replace("//127.0.0.1:", "//localhost:");
  beforeAll(async () => {
    os = await startObjectStore({ dataDir, log: () => {} });
    await os.createBucket(bucket);
    [s, clients] = await Promise.all([
      startSuite({
        env: {
          SVC_STORAGE: "s3",
          SVC_STORAGE_S3_BUCKET: bucket,
          // A host name of its own, as the bucket has in a deployment: npm keeps its Authorization
          // across a redirect to the same host name (any port), and the object store refuses a
          // request that is signed twice (docs/install/s3-redirect.md).
          SVC_STORAGE_S3_ENDPOINT: endpoint(),
          SVC_STORAGE_S3_PATH_STYLE: "true",
          SVC_STORAGE_S3_ACCESS_KEY: os.accessKey,
          SVC_STORAGE_S3_SECRET_KEY: os.secretKey,
          SVC_STORAGE_S3_REDIRECT: "true",
          // The npm clients cannot send Service-Repository-Name.
          SVC_REPOSITORY_SCOPE_FROM_PATH: "true",
        },
      }),
      ensureClients(),
      ensureDebianPackages(["skopeo"]),
    ]);
    py = await ensurePythonClients();
    await s.createRepository("npm", "npm");
    await s.createRepository("pypi", "pypi");
    await s.createRepository("images", "oci");
    reader = (await s.mint({ label: "reader", grants: ["default", "npm", "pypi", "images"].map((scope) => ({ scope, tokens: ["read-only"] })) })).key;
    nothing = (await s.mint({ label: "no rights" })).key;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
    await os?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A request to the gateway that does not follow redirects (curl without -L). */
  const get = (path: string, key: string | undefined, headers: Record<string, string> = {}, method = "GET") =>
    fetch(`${s.gatewayUrl}${path}`, { method, redirect: "manual", headers: { ...(key ? { "service-repository-key": key } : {}), ...headers } });
  const put = async (path: string, body: string | Buffer, type = "application/octet-stream") => {
    const r = await s.call("PUT", path, { key: s.bootstrapKey, body, headers: { "content-type": type } });
    expect(r.status, path).toBe(201);
  };
  const keyOf = (body: string | Buffer) => {
    const sha = createHash("sha256").update(body).digest("hex");
    return `blobs/sha256/${sha.slice(0, 2)}/${sha}`;
  };

  it("a GET is answered 307 with a short-lived URL of the object, signed for its key, which serves the exact bytes inert", async () => {
    const page = "<html><body><script>alert(document.cookie)</script></body></html>\n";
    await put("/repository/default/site/page.html", page, "text/html");
    const answer = await get("/repository/default/site/page.html", reader);
    expect(answer.status).toBe(307);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    const location = answer.headers.get("location")!;
    // Absolute, on the object store, for this one object; the signature, never the secret.
    expect(location.startsWith(`${endpoint()}/${bucket}/${keyOf(page)}?`)).toBe(true);
    const signed = new URL(location).searchParams;
    expect(signed.get("X-Amz-Expires")).toBe("60");
    expect(signed.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(location).not.toContain(os.secretKey);
    expect(location).not.toContain(encodeURIComponent(os.secretKey));

    // The object store serves it with no key of ours: the bytes, the type the server gives
    // .html, and attachment so a browser saves it instead of running it on the bucket's origin.
    const bytes = await fetch(location);
    expect(bytes.status).toBe(200);
    expect(await bytes.text()).toBe(page);
    expect(bytes.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(bytes.headers.get("content-disposition")).toBe('attachment; filename="page.html"');

    // What a browser may show stays inline, with its type, as the server serves it.
    const text = "plain words\n";
    await put("/repository/default/site/notes.txt", text, "text/plain");
    const textAnswer = await get("/repository/default/site/notes.txt", reader);
    expect(textAnswer.status).toBe(307);
    const textBytes = await fetch(textAnswer.headers.get("location")!);
    expect(await textBytes.text()).toBe(text);
    expect(textBytes.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(textBytes.headers.get("content-disposition")).toBeNull();

    // The signature covers this key and these overrides: another object, or another type, is refused.
    const other = new URL(location.replace(keyOf(page), keyOf(text)));
    expect((await fetch(other)).status).toBe(403);
    const retyped = new URL(location);
    retyped.searchParams.set("response-content-type", "text/html");
    retyped.searchParams.delete("response-content-disposition");
    expect((await fetch(retyped)).status).toBe(403);
  });

  it("a Range is sent again to the object store, which answers it; the server's own validators keep the answer here", async () => {
    const body = "hello from the bucket\n";
    await put("/repository/default/ranges/hello.txt", body, "text/plain");
    const answer = await get("/repository/default/ranges/hello.txt", reader, { range: "bytes=6-9" });
    expect(answer.status).toBe(307);
    const part = await fetch(answer.headers.get("location")!, { headers: { range: "bytes=6-9" } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe("from");

    // HEAD moves no bytes: the server answers it, with its own entity tag.
    const head = await get("/repository/default/ranges/hello.txt", reader, {}, "HEAD");
    expect(head.status).toBe(200);
    const etag = head.headers.get("etag")!;
    expect(etag).toBe(`"${createHash("sha256").update(body).digest("hex")}"`);
    expect(head.headers.get("location")).toBeNull();
    // A conditional GET ending in 304 is answered here (fetch would add Cache-Control: no-cache, which asks for the bytes).
    expect((await get("/repository/default/ranges/hello.txt", reader, { "if-none-match": etag, "cache-control": "max-age=0" })).status).toBe(304);
    // If-Range and If-Match name the server's entity tag, which the object store does not know: streamed here.
    const resumed = await get("/repository/default/ranges/hello.txt", reader, { range: "bytes=6-9", "if-range": etag });
    expect(resumed.status).toBe(206);
    expect(await resumed.text()).toBe("from");
    const matched = await get("/repository/default/ranges/hello.txt", reader, { "if-match": etag });
    expect(matched.status).toBe(200);
    expect(await matched.text()).toBe(body);
    // An unsatisfiable range is refused here too.
    expect((await get("/repository/default/ranges/hello.txt", reader, { range: "bytes=500-600" })).status).toBe(416);
  });

  it("off (the default), the same bucket's bytes stream through the server: a 200, no redirect", async () => {
    const body = "streamed as before\n";
    await put("/repository/default/off/plain.txt", body, "text/plain");
    const streaming = await s.startReplica("artifacts", { SVC_STORAGE_S3_REDIRECT: "false" });
    const front = await s.startGateway({ SVC_ARTIFACTS_URL: streaming.url });
    try {
      const got = await fetch(`${front.url}/repository/default/off/plain.txt`, { redirect: "manual", headers: { "service-repository-key": reader } });
      expect(got.status).toBe(200);
      expect(got.headers.get("location")).toBeNull();
      expect(got.headers.get("etag")).toBe(`"${createHash("sha256").update(body).digest("hex")}"`);
      expect(await got.text()).toBe(body);
    } finally {
      await front.stop();
      await streaming.stop();
    }
  });

  it("refuses without read rights (401, 403) and answers a missing path 404, never with a redirect", async () => {
    await put("/repository/default/guarded/secret.bin", Buffer.from([1, 2, 3]));
    const keyless = await get("/repository/default/guarded/secret.bin", undefined);
    expect(keyless.status).toBe(401);
    expect(keyless.headers.get("location")).toBeNull();
    const refused = await get("/repository/default/guarded/secret.bin", nothing);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("location")).toBeNull();
    const missing = await get("/repository/default/guarded/absent.bin", reader);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("location")).toBeNull();
  });

  it("a redirected download is recorded for retention's \"not downloaded for\"", async () => {
    await put("/repository/default/retention/app.zip", "zip");
    expect((await get("/repository/default/retention/app.zip", reader)).status).toBe(307);
    const recorded = await eventually("the redirected download to be recorded", async () => {
      const res = await systemCall(s, "artifacts", "GET", "/internal/repositories/default/artifacts?limit=5000");
      const rows = (await res.json()) as { path: string; lastDownloaded: string | null }[];
      return rows.find((r) => r.path === "retention/app.zip")?.lastDownloaded ?? undefined;
    });
    expect(Date.parse(recorded)).toBeLessThanOrEqual(Date.now());
  });

  it("npm installs a published package: the packument names the server, the tarball GET follows the redirect to the bucket", async () => {
    const work = mkdtempSync(join(dataDir, "npm-"));
    const registry = `${s.gatewayUrl}/repository/npm/`;
    const host = registry.replace(/^https?:/, "");
    const pkg = join(work, "pkg");
    mkdirSync(pkg);
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "redirected-e2e", version: "1.0.0", main: "index.js", license: "MIT" }));
    writeFileSync(join(pkg, "index.js"), 'module.exports = "redirected-e2e@1.0.0";\n');
    const publisher = join(work, "publisher");
    mkdirSync(publisher);
    writeFileSync(join(publisher, "npmrc"), `registry=${registry}\n${host}:_authToken=${s.bootstrapKey}\n`);
    expectOk(await run(clients.npm, ["publish"], { cwd: pkg, env: scratchEnv(publisher) }));

    const doc = (await (await get("/repository/npm/redirected-e2e", reader)).json()) as { versions: Record<string, { dist: { tarball: string } }> };
    const tarball = doc.versions["1.0.0"]!.dist.tarball;
    expect(tarball).toBe(`${registry}redirected-e2e/-/redirected-e2e-1.0.0.tgz`);
    expect((await get(new URL(tarball).pathname, reader)).status).toBe(307);

    const consumer = join(work, "consumer");
    mkdirSync(join(consumer, "project"), { recursive: true });
    const npmrc = `registry=${registry}\n${host}:_authToken=${reader}\nalways-auth=true\n`;
    writeFileSync(join(consumer, "npmrc"), npmrc);
    writeFileSync(join(consumer, "project", ".npmrc"), npmrc);
    writeFileSync(join(consumer, "project", "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    const env = scratchEnv(consumer);
    const installed = await run(clients.npm, ["install", "redirected-e2e@1.0.0", "--loglevel=http"], { cwd: join(consumer, "project"), env });
    expectOk(installed);
    // npm fetched the tarball from the bucket, through the signed URL.
    expect(installed.output).toMatch(new RegExp(`GET 200 ${endpoint()}/${bucket}/blobs/sha256/`));
    expect(readFileSync(join(consumer, "project", "node_modules", "redirected-e2e", "index.js"), "utf8")).toContain("redirected-e2e@1.0.0");
    // The lockfile names the server's URL, not the expiring one of the bucket.
    const lock = JSON.parse(readFileSync(join(consumer, "project", "package-lock.json"), "utf8")) as { packages: Record<string, { resolved: string }> };
    expect(lock.packages["node_modules/redirected-e2e"]!.resolved).toBe(tarball);
  });

  it("pip downloads a wheel: the simple index links to the server, the file GET follows the redirect and its #sha256 checks", async () => {
    const work = mkdtempSync(join(dataDir, "pip-"));
    // A minimal wheel, made with Python's zipfile (nothing to build).
    const wheelName = "redirected_e2e-1.0.0-py3-none-any.whl";
    const made = await run(
      py.python,
      [
        "-c",
        [
          "import sys, zipfile",
          "z = zipfile.ZipFile(sys.argv[1], 'w')",
          "z.writestr('redirected_e2e/__init__.py', 'VERSION = \"1.0.0\"\\n')",
          "z.writestr('redirected_e2e-1.0.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: redirected-e2e\\nVersion: 1.0.0\\n')",
          "z.writestr('redirected_e2e-1.0.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: e2e\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')",
          "z.writestr('redirected_e2e-1.0.0.dist-info/RECORD', '')",
          "z.close()",
        ].join("\n"),
        join(work, wheelName),
      ],
      { cwd: work, env: pythonEnv(work) },
    );
    expectOk(made);
    const content = readFileSync(join(work, wheelName));
    const sha256 = createHash("sha256").update(content).digest("hex");
    const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`__token__:${key}`).toString("base64")}` });
    const form = uploadForm({ name: "redirected-e2e", version: "1.0.0", filetype: "bdist_wheel", pyversion: "py3", sha256_digest: sha256 }, { name: wheelName, content });
    const uploaded = await s.call("POST", "/repository/pypi/", { headers: { ...basic(s.bootstrapKey), "content-type": form.contentType }, body: form.body });
    expect(uploaded.status, await uploaded.text()).toBe(200);

    const page = await (await get("/repository/pypi/simple/redirected-e2e/", undefined, basic(reader))).text();
    expect(page).toContain(`#sha256=${sha256}`);
    expect(page).not.toContain(endpoint());
    const href = /href="([^"]+)"/.exec(page)![1]!;
    const file = new URL(href, `${s.gatewayUrl}/repository/pypi/simple/redirected-e2e/`);
    expect(file.origin).toBe(new URL(s.gatewayUrl).origin);
    expect((await get(file.pathname, undefined, basic(reader))).status).toBe(307);

    const index = `${s.gatewayUrl.replace("://", `://__token__:${reader}@`)}/repository/pypi/simple/`;
    const dest = join(work, "downloaded");
    const pip = await run(py.python, ["-m", "pip", "download", "--isolated", "--no-cache-dir", "--no-deps", "--only-binary", ":all:", "--dest", dest, "--index-url", index, "-v", "redirected-e2e==1.0.0"], { cwd: work, env: pythonEnv(work) });
    expectOk(pip);
    expect(readFileSync(join(dest, wheelName)).equals(content)).toBe(true);
  });
  it("an OCI blob GET is answered 307 to the bucket (as distribution's S3 driver does), its manifest here; skopeo pulls the image through it byte for byte", async () => {
    const digest = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
    const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`skopeo:${key}`).toString("base64")}` });
    const v2 = (method: string, path: string, key: string, headers: Record<string, string> = {}, body?: Buffer) =>
      fetch(new URL(path, `${s.gatewayUrl}/v2/images/app/`), { method, redirect: "manual", headers: { ...basic(key), ...headers }, body } as RequestInit);
    const pushBlob = async (b: Buffer) => {
      const res = await v2("POST", `blobs/uploads/?digest=${digest(b)}`, s.bootstrapKey, { "content-type": "application/octet-stream" }, b);
      expect(res.status, await res.text()).toBe(201);
      return { digest: digest(b), size: b.length };
    };
    const tar = tarOf({ "hello.txt": "served by the bucket\n" });
    const layer = gzipSync(tar);
    const layerRef = await pushBlob(layer);
    const config = await pushBlob(Buffer.from(JSON.stringify({ architecture: "amd64", os: "linux", config: {}, rootfs: { type: "layers", diff_ids: [digest(tar)] } })));
    const manifestType = "application/vnd.oci.image.manifest.v1+json";
    const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: manifestType, config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config }, layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", ...layerRef }] }));
    const pushed = await v2("PUT", "manifests/v1", s.bootstrapKey, { "content-type": manifestType }, manifest);
    expect(pushed.status, await pushed.text()).toBe(201);

    const answer = await v2("GET", `blobs/${layerRef.digest}`, reader);
    expect(answer.status).toBe(307);
    expect(answer.headers.get("docker-content-digest")).toBe(layerRef.digest);
    const location = answer.headers.get("location")!;
    expect(location.startsWith(`${endpoint()}/${bucket}/${keyOf(layer)}?`)).toBe(true);
    expect(Buffer.from(await (await fetch(location)).arrayBuffer()).equals(layer)).toBe(true);
    // The manifest is the server's answer (its digest and type), and HEAD moves no bytes.
    const got = await v2("GET", "manifests/v1", reader, { accept: manifestType });
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(manifest)).toBe(true);
    expect((await v2("HEAD", `blobs/${layerRef.digest}`, reader)).status).toBe(200);
    // Without read rights: refused here, never redirected.
    const refused = await v2("GET", `blobs/${layerRef.digest}`, nothing);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("location")).toBeNull();

    // skopeo (Go's client) follows the 307 to the bucket, leaving the registry's credentials behind (another host name).
    const work = mkdtempSync(join(dataDir, "oci-"));
    const out = join(work, "out");
    const pulled = await run("skopeo", ["--insecure-policy", "copy", "--src-tls-verify=false", "--src-creds", `skopeo:${reader}`, `docker://${new URL(s.gatewayUrl).host}/images/app:v1`, `oci:${out}:v1`], { cwd: work, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work } });
    expectOk(pulled);
    expect(readFileSync(join(out, "blobs", "sha256", layerRef.digest.slice("sha256:".length))).equals(layer)).toBe(true);
  });
});
