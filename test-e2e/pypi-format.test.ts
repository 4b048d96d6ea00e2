import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { keyId } from "@svc/keys";
import { identityHeaders } from "@svc/kit";
import { run, type Run } from "./npm-clients.js";
import { basicAuth, buildDist, ensurePythonClients, fileSha256, pythonRuns, uploadForm, type Dist, type PythonClients } from "./pypi-clients.js";
import { storeObjects } from "./store-objects.js";
import { startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";

/**
 * twine and pip, unmodified (Debian's), against a pypi repository through the gateway with
 * minted keys granted that repository only (svc.repository-scope-from-path: neither client can
 * send Service-Repository-Name). The test distributions are built here, offline.
 */
describe("pypi repositories with twine and pip", () => {
  let s: Suite;
  let py: PythonClients;
  let work: string;
  let deployer: string;
  let reader: string;
  let myPkg: Dist;
  let runs: ReturnType<typeof pythonRuns>;

  beforeAll(async () => {
    [s, py] = await Promise.all([startSuite({ env: { SVC_REPOSITORY: "pypi", SVC_REPOSITORY_FORMAT: "pypi", SVC_REPOSITORY_SCOPE_FROM_PATH: "true" } }), ensurePythonClients()]);
    work = mkdtempSync(join(inject("dataDir"), "pypi-clients-"));
    runs = pythonRuns(work, py);
    deployer = (await s.mint({ label: "uploader", grants: [{ scope: "pypi", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "reader", grants: [{ scope: "pypi", tokens: ["read-only"] }] })).key;
    myPkg = await buildDist(work, py, { name: "My_Pkg", version: "1.0.0", requiresPython: ">=3.8" });
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  const scratch = () => runs.scratch();
  const expectOk = (x: Run) => runs.expectOk(x);
  /** twine upload with the key as password (TWINE_*), to the repository URL given as the docs say. */
  const upload = (files: string[], password: string | undefined, url = `${s.gatewayUrl}/repository/pypi/`) => runs.twine(url, files, password);
  /** pip installing from the index with `key` (Debian's setuptools visible when an sdist is built). */
  const pipInstall = (key: string, args: string[], opts: { systemSite?: boolean } = {}) => runs.pipInstall(`${s.gatewayUrl.replace("://", `://x:${key}@`)}/repository/pypi/simple/`, args, opts);
  const sha256 = fileSha256;
  const basic = basicAuth;

  it("twine uploads a wheel and an sdist, and pip installs each into a clean venv", async () => {
    expectOk(await upload([myPkg.wheel, myPkg.sdist], deployer));
    const wheel = await pipInstall(reader, ["--only-binary", ":all:", "My_Pkg==1.0.0"]);
    expectOk(wheel.r);
    expect(wheel.r.output).toContain(basename(myPkg.wheel));
    expect((await wheel.imported("my_pkg")).stdout.trim()).toBe("My_Pkg@1.0.0");
    const sdist = await pipInstall(reader, ["--no-binary", ":all:", "--no-build-isolation", "my-pkg==1.0.0"], { systemSite: true });
    expectOk(sdist.r);
    expect(sdist.r.output).toContain(basename(myPkg.sdist));
    expect((await sdist.imported("my_pkg")).stdout.trim()).toBe("My_Pkg@1.0.0");
  });

  it("each uploaded file is an artifact event with its PyPI coordinates", async () => {
    const dist = await buildDist(work, py, { name: "Evt.Pkg", version: "2.1" });
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === "pypi" && e.path.startsWith("packages/evt-pkg/"));
    try {
      expectOk(await upload([dist.wheel, dist.sdist], deployer));
      const got = await events.until("both files' events", (es) => es.length >= 2);
      expect(got.map((e) => [e.kind, e.path, e.package])).toEqual(
        [dist.wheel, dist.sdist].map((f) => ["artifact.published", `packages/evt-pkg/2.1/${basename(f)}`, { format: "pypi", name: "evt-pkg", version: "2.1", file: basename(f) }]),
      );
    } finally {
      await events.close();
    }
  });

  it("the simple index: PEP 503 HTML with #sha256 and escaped data-requires-python, PEP 691 JSON by Accept, one normalised URL per project", async () => {
    const html = await s.call("GET", "/repository/pypi/simple/my-pkg/", { headers: basic(reader) });
    expect(html.status).toBe(200);
    const page = await html.text();
    expect(page).toContain(`#sha256=${sha256(myPkg.wheel)}`);
    expect(page).toContain(`#sha256=${sha256(myPkg.sdist)}`);
    expect(page).toContain('data-requires-python="&gt;=3.8"');
    const list = await (await s.call("GET", "/repository/pypi/simple/", { headers: basic(reader) })).text();
    expect(list).toContain('<a href="my-pkg/">my-pkg</a>');

    const json = await s.call("GET", "/repository/pypi/simple/my-pkg/", { headers: { ...basic(reader), accept: "application/vnd.pypi.simple.v1+json" } });
    expect(json.headers.get("content-type")).toMatch(/^application\/vnd\.pypi\.simple\.v1\+json/);
    const doc = (await json.json()) as { name: string; files: { filename: string; url: string; hashes: { sha256: string }; "requires-python": string; yanked: boolean }[] };
    expect(doc.name).toBe("my-pkg");
    const wheel = doc.files.find((f) => f.filename === basename(myPkg.wheel))!;
    expect(wheel).toMatchObject({ hashes: { sha256: sha256(myPkg.wheel) }, "requires-python": ">=3.8", yanked: false });
    // The link resolves against the page's URL to a file the gateway serves.
    const file = await s.call("GET", new URL(wheel.url, `${s.gatewayUrl}/repository/pypi/simple/my-pkg/`).pathname, { headers: basic(reader) });
    expect(file.status).toBe(200);
    expect(createHash("sha256").update(Buffer.from(await file.arrayBuffer())).digest("hex")).toBe(sha256(myPkg.wheel));

    for (const spelt of ["My_Pkg/", "my.pkg/", "MY-PKG", "my-pkg"]) {
      const r = await fetch(`${s.gatewayUrl}/repository/pypi/simple/${spelt}`, { headers: basic(reader), redirect: "manual" });
      expect(r.status, spelt).toBe(301);
      expect(r.headers.get("location"), spelt).toBe("/repository/pypi/simple/my-pkg/");
    }
  });

  it("pip does not pick a yanked version unless pinned to it, and honours requires-python", async () => {
    const v1 = await buildDist(work, py, { name: "yank-me", version: "1.0" });
    const v2 = await buildDist(work, py, { name: "yank-me", version: "1.1" });
    const old = await buildDist(work, py, { name: "py-req", version: "1.0", requiresPython: ">=3" });
    const future = await buildDist(work, py, { name: "py-req", version: "2.0", requiresPython: ">=4" });
    expectOk(await upload([v1.wheel, v2.wheel, old.wheel, future.wheel], deployer));
    const yank = await s.call("POST", "/api/repositories/pypi/pypi/yank", { key: s.bootstrapKey, body: { project: "Yank_Me", version: "1.1", yanked: true, reason: "broken <build>" } });
    expect(yank.status).toBe(200);
    expect(await yank.json()).toEqual({ files: [basename(v2.wheel)] });
    const page = await (await s.call("GET", "/repository/pypi/simple/yank-me/", { headers: basic(reader) })).text();
    expect(page).toContain('data-yanked="broken &lt;build&gt;"');

    const latest = await pipInstall(reader, ["yank-me"]);
    expectOk(latest.r);
    expect((await latest.imported("yank_me")).stdout.trim()).toBe("yank-me@1.0");
    const pinned = await pipInstall(reader, ["yank-me==1.1"]);
    expectOk(pinned.r);
    expect((await pinned.imported("yank_me")).stdout.trim()).toBe("yank-me@1.1");

    const req = await pipInstall(reader, ["py-req"]);
    expectOk(req.r);
    expect((await req.imported("py_req")).stdout.trim()).toBe("py-req@1.0");
  });

  it("a file name is never reused: the same file again is fine, other content under it is refused with PyPI's reason", async () => {
    expectOk(await upload([myPkg.wheel], deployer, `${s.gatewayUrl}/repository/pypi`));
    const other = await buildDist(join(work, "other"), py, { name: "My_Pkg", version: "1.0.0", requiresPython: ">=3.9" });
    expect(sha256(other.wheel)).not.toBe(sha256(myPkg.wheel));
    const refused = await upload([other.wheel], deployer);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/400 Bad Request[\s\S]*File already exists/);
  });

  const wheelForm = (name: string, version: string, content: Buffer) =>
    uploadForm({ name, version, filetype: "bdist_wheel", pyversion: "py3", sha256_digest: createHash("sha256").update(content).digest("hex") }, { name: `${name}-${version}-py3-none-any.whl`, content });

  it("an upload form of several MB streams through to the store", async () => {
    const content = randomBytes(6 * 1024 * 1024);
    const form = wheelForm("big_pkg", "1.0", content);
    const r = await s.call("POST", "/repository/pypi/", { headers: { ...basic(deployer), "content-type": form.contentType }, body: form.body });
    expect(r.status, await r.text()).toBe(200);
    const got = await s.call("GET", "/repository/pypi/packages/big-pkg/1.0/big_pkg-1.0-py3-none-any.whl", { headers: basic(reader) });
    expect(got.status).toBe(200);
    expect(createHash("sha256").update(Buffer.from(await got.arrayBuffer())).digest("hex")).toBe(createHash("sha256").update(content).digest("hex"));
  });

  /** Resident memory of a process now, and its peak since `resetPeak` (VmHWM; Linux resets it when 5 is written to clear_refs). */
  const memoryMiB = (pid: number) => {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]);
    return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
  };
  const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, "5");

  it("a form with 32 extra fields of 8 MiB is refused 413 at the first, naming the limit, and the artifacts service's memory stays bounded", async () => {
    const pid = s.pid("artifacts")!;
    const content = Buffer.from("fat_form wheel");
    const boundary = "----svc-e2e-fat-form";
    const mib = Buffer.alloc(1024 * 1024, "x");
    const field = (name: string, value: string) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
    // 256 MiB of fields, made as they are sent: the test holds 1 MiB of it at a time.
    async function* form() {
      for (const [name, value] of Object.entries({ ":action": "file_upload", protocol_version: "1", name: "fat_form", version: "1.0", filetype: "bdist_wheel", pyversion: "py3", sha256_digest: createHash("sha256").update(content).digest("hex") })) yield field(name, value);
      for (let i = 0; i < 32; i++) {
        yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="extra_${i}"\r\n\r\n`);
        for (let m = 0; m < 8; m++) yield mib;
        yield Buffer.from("\r\n");
      }
      yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="content"; filename="fat_form-1.0-py3-none-any.whl"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      yield content;
      yield Buffer.from(`\r\n--${boundary}--\r\n`);
    }
    const before = memoryMiB(pid).rss;
    resetPeak(pid);
    const r = await s.call("POST", "/repository/pypi/", {
      headers: { ...basic(deployer), "content-type": `multipart/form-data; boundary=${boundary}` },
      body: Readable.toWeb(Readable.from(form())) as ReadableStream,
    });
    expect(r.status, await r.text()).toBe(413);
    // twine prints the status line: the reason phrase names the field and the limit.
    expect(r.statusText).toMatch(/form field extra_0 is longer than 64 KiB/);
    // The service answers again (the rest of the body was drained, not kept), and kept nothing.
    expect((await s.call("GET", "/repository/pypi/simple/fat-form/", { headers: basic(reader) })).status).toBe(404);
    const grew = memoryMiB(pid).peak - before;
    expect(grew, `artifacts' peak resident memory grew by ${grew.toFixed(0)} MiB`).toBeLessThan(64);
  });

  it("the form's limits: 64 KiB a field, 1 MiB the description, 2 MiB all fields; each refused 413 with its limit, nothing stored", async () => {
    const content = Buffer.from("limits_pkg wheel");
    const post = (fields: Record<string, string>) => {
      const form = uploadForm({ name: "limits_pkg", version: "1.0", filetype: "bdist_wheel", pyversion: "py3", sha256_digest: createHash("sha256").update(content).digest("hex"), ...fields }, { name: "limits_pkg-1.0-py3-none-any.whl", content });
      return s.call("POST", "/repository/pypi/", { headers: { ...basic(deployer), "content-type": form.contentType }, body: form.body });
    };
    const kib = (n: number) => "y".repeat(n * 1024);
    const refused: [Record<string, string>, RegExp][] = [
      [{ license: kib(64) + "y" }, /form field license is longer than 64 KiB/],
      [{ description: kib(1024) + "y" }, /form field description is longer than 1 MiB/],
      [Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`classifiers_${i}`, kib(60)])), /form fields together are longer than 2 MiB/],
    ];
    for (const [fields, reason] of refused) {
      const r = await post(fields);
      expect(r.status, reason.source).toBe(413);
      expect(r.statusText).toMatch(reason);
      expect((await s.call("GET", "/repository/pypi/simple/limits-pkg/", { headers: basic(reader) })).status).toBe(404);
    }
    const ok = await post({ description: kib(1000), license: kib(64) });
    expect(ok.status, await ok.text()).toBe(200);
  });

  it("twine uploads a wheel whose README (the form's description) is far over the 64 KiB of other fields", async () => {
    const readme = `# Long readme\n\n${"A paragraph of documentation that goes on. ".repeat(8000)}\n`;
    expect(readme.length).toBeGreaterThan(300 * 1024);
    const dist = await buildDist(join(work, "long-readme"), py, { name: "long_readme", version: "1.0", readme });
    expectOk(await upload([dist.wheel], deployer));
    expect((await s.call("GET", `/repository/pypi/packages/long-readme/1.0/${basename(dist.wheel)}`, { headers: basic(reader) })).status).toBe(200);
  });

  it("a wheel whose file name names another version or project than the form is refused 400 and stores nothing", async () => {
    const content = Buffer.from("proj_a wheel");
    const post = (name: string, version: string, filename: string) => {
      const form = uploadForm({ name, version, filetype: "bdist_wheel", pyversion: "py3", sha256_digest: createHash("sha256").update(content).digest("hex") }, { name: filename, content });
      return s.call("POST", "/repository/pypi/", { headers: { ...basic(deployer), "content-type": form.contentType }, body: form.body });
    };
    const refused: [string, string, RegExp][] = [
      ["proj_a-9.9-py3-none-any.whl", "1.2", /Version in filename should be '1.2' not '9.9'/],
      ["proj_a-1.2.1-py3-none-any.whl", "1.2", /Version in filename should be '1.2' not '1.2.1'/],
      ["proj_b-1.2-py3-none-any.whl", "1.2", /proj_b-1.2-py3-none-any.whl belongs to project proj-b, not proj-a/],
    ];
    for (const [filename, version, reason] of refused) {
      const r = await post("proj_a", version, filename);
      expect(r.status, filename).toBe(400);
      expect(r.statusText, filename).toMatch(reason);
      expect((await s.call("GET", "/repository/pypi/simple/proj-a/", { headers: basic(reader) })).status, filename).toBe(404);
      expect((await s.call("GET", `/repository/pypi/packages/proj-a/${version}/${filename}`, { headers: basic(reader) })).status, filename).toBe(404);
    }
    // The same version spelt otherwise (PEP 440: 1.2.0 is 1.2) and the name in another spelling are the same release.
    const ok = await post("Proj.A", "1.2", "proj_a-1.2.0-py3-none-any.whl");
    expect(ok.status, await ok.text()).toBe(200);
    expect((await s.call("GET", "/repository/pypi/packages/proj-a/1.2/proj_a-1.2.0-py3-none-any.whl", { headers: basic(reader) })).status).toBe(200);
  });

  it("an upload cut short after its file landed (a crash before its commit) can be sent again: the file lands and is listed", async () => {
    const content = Buffer.from("cut_short wheel");
    const filename = "cut_short-1.0-py3-none-any.whl";
    // What a crash between the file's blob commit and the index commit leaves: the blob of the
    // very file, with no path and no index row; the upload sent again finds its blob there.
    const digest = createHash("sha256").update(content).digest("hex");
    const store = storeObjects(s);
    try {
      await store.writeBlob(digest, content);
    } finally {
      store.close();
    }
    expect((await s.call("GET", `/repository/pypi/packages/cut-short/1.0/${filename}`, { headers: basic(reader) })).status).toBe(404);
    const form = wheelForm("cut_short", "1.0", content);
    const r = await s.call("POST", "/repository/pypi/", { headers: { ...basic(deployer), "content-type": form.contentType }, body: form.body });
    expect(r.status, await r.text()).toBe(200);
    const got = await s.call("GET", `/repository/pypi/packages/cut-short/1.0/${filename}`, { headers: basic(reader) });
    expect(Buffer.from(await got.arrayBuffer()).toString()).toBe("cut_short wheel");
    expect(await (await s.call("GET", "/repository/pypi/simple/cut-short/", { headers: basic(reader) })).text()).toContain(`${filename}#sha256=${createHash("sha256").update(content).digest("hex")}`);
  });

  it("every digest the form declares is checked against the bytes: a wrong blake2_256_digest or md5_digest is refused with 400 and stores nothing", async () => {
    const content = Buffer.from("digest_pkg wheel ".repeat(256)).subarray(0, 4096);
    const filename = "digest_pkg-1.0-py3-none-any.whl";
    const digest = (algorithm: string) => createHash(algorithm).update(content).digest("hex");
    // What twine sends, hashlib.blake2b(content, digest_size=32).hexdigest(): the digest length is
    // a parameter of BLAKE2b's initial state, so BLAKE2b-512 cut short is another value, refused.
    const blake2 = "55324477ecdcb22f79dd5f1595eb3cd8153b0aecbc91863c86d6bcc7dc940b34";
    const cut = digest("blake2b512").slice(0, 64);
    const post = (fields: Record<string, string>) => {
      const form = uploadForm({ name: "digest_pkg", version: "1.0", filetype: "bdist_wheel", pyversion: "py3", sha256_digest: digest("sha256"), ...fields }, { name: filename, content });
      return s.call("POST", "/repository/pypi/", { headers: { ...basic(deployer), "content-type": form.contentType }, body: form.body });
    };
    const stored = async () => (await s.call("GET", `/repository/pypi/packages/digest-pkg/1.0/${filename}`, { headers: basic(reader) })).status;

    for (const [field, wrong] of [["blake2_256_digest", cut], ["md5_digest", digest("md5").replace(/^./, (c) => (c === "0" ? "1" : "0"))]] as const) {
      const r = await post({ [field]: wrong });
      expect(r.status, field).toBe(400);
      // twine prints the status line: the reason phrase names the digest.
      expect(r.statusText, field).toMatch(new RegExp(`${field} does not match`));
      expect(await stored(), field).toBe(404);
      expect((await s.call("GET", "/repository/pypi/simple/digest-pkg/", { headers: basic(reader) })).status, field).toBe(404);
    }
    const ok = await post({ blake2_256_digest: blake2, md5_digest: digest("md5") });
    expect(ok.status, await ok.text()).toBe(200);
    expect(await stored()).toBe(200);
  });

  it("stores nothing from a signed upload form sent straight to artifacts with another body", async () => {
    const principal = `key:${s.tenant}:${keyId(s.bootstrapKey)}`;
    const signed = wheelForm("tampered", "1.0", Buffer.from("the signed wheel"));
    const other = wheelForm("tampered", "1.0", Buffer.from("another wheel entirely"));
    // Same boundary, so the forged form parses as well as the signed one would.
    const forged = Buffer.from(other.body.toString("latin1").replaceAll(other.contentType.split("boundary=")[1]!, signed.contentType.split("boundary=")[1]!), "latin1");
    const headers = identityHeaders(s.internalSecret, "POST", "/repository/pypi/", principal, Date.now(), { body: signed.body, headers: { "content-type": signed.contentType } });
    const r = await fetch(`${s.urls.artifacts}/repository/pypi/`, { method: "POST", headers, body: forged });
    expect(r.status).toBe(401);
    expect((await s.call("GET", "/repository/pypi/simple/tampered/", { headers: basic(reader) })).status).toBe(404);
    expect((await s.call("GET", "/repository/pypi/packages/tampered/1.0/tampered-1.0-py3-none-any.whl", { headers: basic(reader) })).status).toBe(404);
  });

  it("twine is refused without a key and with a read-only key, printing the server's reason", async () => {
    const none = await upload([myPkg.sdist], "not-a-key");
    expect(none.code).not.toBe(0);
    expect(none.output).toMatch(/401[\s\S]*does not hold a well-formed key/);
    const readOnly = await upload([myPkg.sdist], reader);
    expect(readOnly.code).not.toBe(0);
    expect(readOnly.output).toMatch(/403[\s\S]*repository:write/);
  });

  it("pip is refused without a key", async () => {
    const c = scratch();
    expectOk(await run(py.python, ["-m", "venv", join(c.dir, "venv")], { cwd: c.dir, env: c.env }));
    const r = await run(join(c.dir, "venv", "bin", "pip"), ["install", "-vv", "--isolated", "--no-cache-dir", "--no-input", "--index-url", `${s.gatewayUrl}/repository/pypi/simple/`, "my-pkg"], { cwd: c.dir, env: c.env });
    expect(r.code).not.toBe(0);
    // pip says why in its debug log (-vv): the status line with the gateway's reason.
    expect(r.output).toMatch(/401[\s\S]*a key is required/);
  });
});
