import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { run } from "./npm-clients.js";
import { ensurePythonClients, pythonEnv, uploadForm, type PythonClients } from "./pypi-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { adminCaller, eventually } from "./upstream.js";

type Run = { id: string; walk: string; outcome: string; counts: Record<string, Record<string, number>> };
type SimpleProject = { files: { filename: string }[] };
type NpmDoc = { "dist-tags": Record<string, string>; versions: Record<string, { dist: { tarball: string } }> };

const JSON_INDEX = "application/vnd.pypi.simple.v1+json";
const ABBREVIATED = "application/vnd.npm.install-v1+json";
const fresh = (what: string) => `${what}-${randomBytes(4).toString("hex")}`;
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/**
 * A package file removed by anything but its format's own action (retention, a DELETE of its
 * path, the walker's repair) leaves every index of its format: pip's simple index, npm's
 * documents and Maven's maven-metadata.xml never offer a file that answers 404.
 */
describe("package files removed by retention, DELETE and repair leave their format's index", () => {
  let s: Suite;
  let py: PythonClients;
  let work: string;
  let walks: Awaited<ReturnType<typeof adminCaller>>["call"];
  let repos: Awaited<ReturnType<typeof adminCaller>>["call"];
  const key = () => s.bootstrapKey;
  const basic = () => ({ authorization: `Basic ${Buffer.from(`__token__:${key()}`).toString("base64")}` });

  /** Loses a file's content behind the server's back: the blob its index row names is deleted from the store. */
  const lose = async (repo: string, path: string) => {
    const [f] = (await (await s.call("GET", `/api/repositories/${repo}/files?prefix=${encodeURIComponent(path)}`, { key: key() })).json()) as { path: string; sha256: string }[];
    expect(f?.path).toBe(path);
    rmSync(join(s.storeRoot, "blobs", "sha256", f!.sha256.slice(0, 2), f!.sha256));
  };

  beforeAll(async () => {
    [s, py] = await Promise.all([startSuite(), ensurePythonClients()]);
    work = mkdtempSync(join(inject("dataDir"), "format-removals-"));
    walks = (await adminCaller(s, "/api/walks", "walker")).call;
    repos = (await adminCaller(s, "/api/repositories", "artifacts")).call;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  const create = async (name: string, format: string) => expect((await s.call("POST", "/api/repositories", { key: key(), body: { name, format } })).status).toBe(201);
  /** Runs a walk now and waits (bounded) until it has ended. */
  const walk = async (name: "retention" | "rebuild") => {
    const res = await walks("POST", name === "rebuild" ? "/api/walks/run" : `/api/walks/${name}/run`);
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as Run;
    const done = await eventually(`run ${id} of ${name} to end`, async () => ((await (await walks("GET", `/api/walks/${name}/runs`)).json()) as Run[]).find((r) => r.id === id && r.outcome !== "running"), 60_000);
    expect(done.outcome).toBe("succeeded");
    return done;
  };

  describe("pypi", () => {
    const repo = fresh("py");
    beforeAll(() => create(repo, "pypi"));

    const upload = async (name: string, version: string, filename: string) => {
      const content = randomBytes(64);
      const form = uploadForm({ name, version, sha256_digest: sha256(content) }, { name: filename, content });
      const r = await s.call("POST", `/repository/${repo}/`, { headers: { ...basic(), "content-type": form.contentType }, body: form.body });
      expect(r.status, await r.text()).toBe(200);
    };
    /** The file names a project page lists, as HTML and as JSON; undefined when the page answers 404. */
    const listed = async (project: string) => {
      const html = await s.call("GET", `/repository/${repo}/simple/${project}/`, { headers: basic() });
      const json = await s.call("GET", `/repository/${repo}/simple/${project}/`, { headers: { ...basic(), accept: JSON_INDEX } });
      expect(json.status).toBe(html.status);
      if (html.status === 404) return undefined;
      expect(html.status).toBe(200);
      const fromHtml = [...(await html.text()).matchAll(/>([^<]+)<\/a>/g)].map((m) => m[1]);
      const fromJson = ((await json.json()) as SimpleProject).files.map((f) => f.filename);
      expect(fromHtml).toEqual(fromJson);
      return fromJson;
    };
    const projects = async () => {
      const html = await (await s.call("GET", `/repository/${repo}/simple/`, { headers: basic() })).text();
      const json = (await (await s.call("GET", `/repository/${repo}/simple/`, { headers: { ...basic(), accept: JSON_INDEX } })).json()) as { projects: { name: string }[] };
      const names = json.projects.map((p) => p.name);
      expect([...html.matchAll(/>([^<]+)<\/a>/g)].map((m) => m[1])).toEqual(names);
      return names;
    };

    it("a file retention removed is no longer listed, and pip does not try it; a DELETE of the last file takes the project off the root index", async () => {
      const wheel = "ret_pkg-1.0-py3-none-any.whl";
      const sdist = "ret_pkg-1.0.tar.gz";
      // One after the other: the wheel is the older "version" of the folder packages/ret-pkg/1.0.
      await upload("ret_pkg", "1.0", wheel);
      await upload("ret_pkg", "1.0", sdist);
      expect(await listed("ret-pkg")).toEqual([wheel, sdist]);
      expect((await repos("PUT", `/api/repositories/${repo}/retention`, { path: "packages/ret-pkg", keepVersions: 1 })).status).toBe(200);

      const done = await walk("retention");
      expect(done.counts.retention).toMatchObject({ removed: 1 });
      expect((await s.call("GET", `/repository/${repo}/packages/ret-pkg/1.0/${wheel}`, { key: key() })).status).toBe(404);
      expect(await listed("ret-pkg")).toEqual([sdist]);

      // pip finds no wheel to take, rather than a link that answers 404.
      const dir = mkdtempSync(join(work, "pip-"));
      const index = `${s.gatewayUrl.replace("://", `://x:${key()}@`)}/repository/${repo}/simple/`;
      const pip = await run(py.python, ["-m", "pip", "download", "--isolated", "--no-cache-dir", "--no-deps", "--only-binary", ":all:", "-d", join(dir, "out"), "--index-url", index, "ret-pkg"], { cwd: dir, env: pythonEnv(dir) });
      expect(pip.code).not.toBe(0);
      expect(pip.output).toMatch(/No matching distribution found for ret-pkg/);
      expect(pip.output).not.toContain(wheel);

      expect(await projects()).toContain("ret-pkg");
      expect((await s.call("DELETE", `/repository/${repo}/packages/ret-pkg/1.0/${sdist}`, { key: key() })).status).toBe(204);
      expect(await listed("ret-pkg")).toBeUndefined();
      expect(await projects()).not.toContain("ret-pkg");
    });

    it("a file the walker's repair forgets (gone from the store) leaves the index, and its project with it", async () => {
      const wheel = "lost_pkg-2.0-py3-none-any.whl";
      await upload("lost.pkg", "2.0", wheel);
      expect(await listed("lost-pkg")).toEqual([wheel]);
      await lose(repo, `packages/lost-pkg/2.0/${wheel}`);

      const done = await walk("rebuild");
      expect(done.counts.repair).toMatchObject({ forgotten: 1 });
      expect(await listed("lost-pkg")).toBeUndefined();
      expect(await projects()).not.toContain("lost-pkg");
    });
  });

  describe("npm", () => {
    const repo = fresh("js");
    beforeAll(() => create(repo, "npm"));

    const publish = async (name: string, version: string) => {
      const tgz = gzipSync(Buffer.from(`${name}@${version}`));
      const manifest = { name, version, dist: { shasum: createHash("sha1").update(tgz).digest("hex") } };
      const body = { name, "dist-tags": { latest: version }, versions: { [version]: manifest }, _attachments: { [`${name}-${version}.tgz`]: { data: tgz.toString("base64"), length: tgz.length } } };
      return s.call("PUT", `/repository/${repo}/${name}`, { key: key(), body });
    };
    const read = async (name: string, accept: string) => {
      const res = await s.call("GET", `/repository/${repo}/${name}`, { key: key(), headers: { accept } });
      return { status: res.status, doc: (res.status === 200 ? await res.json() : undefined) as NpmDoc };
    };

    it("versions whose tarballs retention removed leave both documents and their dist-tags, and are never published again", async () => {
      const name = fresh("kept");
      for (const v of ["1.0.0", "1.1.0", "1.2.0"]) expect((await publish(name, v)).status).toBe(201);
      for (const [tag, v] of [["beta", "1.1.0"], ["latest", "1.0.0"]]) {
        expect((await s.call("PUT", `/repository/${repo}/-/package/${name}/dist-tags/${tag}`, { key: key(), body: JSON.stringify(v), headers: { "content-type": "application/json" } })).status).toBe(201);
      }
      expect((await repos("PUT", `/api/repositories/${repo}/retention`, { path: name, keepVersions: 1 })).status).toBe(200);

      const done = await walk("retention");
      expect(done.counts.retention).toMatchObject({ removed: 2 });
      for (const accept of ["application/json", ABBREVIATED]) {
        const { status, doc } = await read(name, accept);
        expect(status).toBe(200);
        expect(Object.keys(doc.versions)).toEqual(["1.2.0"]);
        // No tag points at a version that is gone; latest moves to the newest kept.
        expect(doc["dist-tags"]).toEqual({ latest: "1.2.0" });
        const tarball = await s.call("GET", new URL(doc.versions["1.2.0"]!.dist.tarball).pathname, { key: key() });
        expect(tarball.status).toBe(200);
      }
      expect((await s.call("GET", `/repository/${repo}/${name}/1.0.0`, { key: key() })).status).toBe(404);
      expect((await publish(name, "1.0.0")).status).toBe(409);
    });

    it("a package whose every tarball is gone from the store is gone after the walker's repair", async () => {
      const name = fresh("lost");
      expect((await publish(name, "3.0.0")).status).toBe(201);
      await lose(repo, `${name}/-/${name}-3.0.0.tgz`);
      await walk("rebuild");
      for (const accept of ["application/json", ABBREVIATED]) expect((await read(name, accept)).status).toBe(404);
    });
  });

  describe("maven", () => {
    const repo = fresh("mvn");
    beforeAll(() => create(repo, "maven"));
    const put = async (path: string) => expect((await s.call("PUT", `/repository/${repo}/${path}`, { key: key(), body: randomBytes(32) })).status).toBe(201);
    /** A version's jar and POM, as mvn deploy sends them (its checksums and metadata add nothing the server keeps). */
    const deploy = async (dir: string, file: string) => {
      for (const ext of ["jar", "pom"]) await put(`${dir}/${file}.${ext}`);
    };
    const metadata = async (path: string) => {
      const r = await s.call("GET", `/repository/${repo}/${path}/maven-metadata.xml`, { key: key() });
      return { status: r.status, text: await r.text() };
    };
    const tags = (xml: string, tag: string) => [...xml.matchAll(new RegExp(`<${tag}>([^<]+)</${tag}>`, "g"))].map((m) => m[1]);

    it("a version whose files retention removed leaves the artifact's maven-metadata.xml; a SNAPSHOT build repair forgot leaves the version's", async () => {
      const lib = "com/example/lib";
      await deploy(`${lib}/1.0`, "lib-1.0");
      const firstDeployed = Date.now();
      await deploy(`${lib}/1.1`, "lib-1.1");
      await deploy(`${lib}/2.0-SNAPSHOT`, "lib-2.0-20240101.120000-1");
      await deploy(`${lib}/2.0-SNAPSHOT`, "lib-2.0-20240102.120000-2");
      expect(tags((await metadata(lib)).text, "version")).toEqual(["1.0", "1.1", "2.0-SNAPSHOT"]);
      expect(tags((await metadata(`${lib}/2.0-SNAPSHOT`)).text, "value")).toEqual(["2.0-20240102.120000-2", "2.0-20240102.120000-2"]);

      // Every file of 1.0 is older than a second once a second has passed: retention takes both.
      expect((await repos("PUT", `/api/repositories/${repo}/retention`, { path: `${lib}/1.0`, maxAge: "PT1S" })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstDeployed + 1_500 - Date.now())));
      const done = await walk("retention");
      expect(done.counts.retention).toMatchObject({ removed: 2 });
      const artifact = (await metadata(lib)).text;
      expect(tags(artifact, "version")).toEqual(["1.1", "2.0-SNAPSHOT"]);
      expect(tags(artifact, "release")).toEqual(["1.1"]);

      // The latest build's files are lost from the store: -SNAPSHOT resolves the build before it again.
      for (const ext of ["jar", "pom"]) await lose(repo, `${lib}/2.0-SNAPSHOT/lib-2.0-20240102.120000-2.${ext}`);
      const repaired = await walk("rebuild");
      expect(repaired.counts.repair).toMatchObject({ forgotten: 2 });
      const version = (await metadata(`${lib}/2.0-SNAPSHOT`)).text;
      expect(tags(version, "value")).toEqual(["2.0-20240101.120000-1", "2.0-20240101.120000-1"]);
      expect(tags(version, "buildNumber")).toEqual(["1"]);
      for (const ext of ["jar", "pom"]) expect((await s.call("GET", `/repository/${repo}/${lib}/2.0-SNAPSHOT/lib-2.0-20240101.120000-1.${ext}`, { key: key() })).status).toBe(200);

      // The SNAPSHOT's last build gone too, the version leaves the artifact's document.
      for (const ext of ["jar", "pom"]) await lose(repo, `${lib}/2.0-SNAPSHOT/lib-2.0-20240101.120000-1.${ext}`);
      await walk("rebuild");
      expect((await metadata(`${lib}/2.0-SNAPSHOT`)).status).toBe(404);
      expect(tags((await metadata(lib)).text, "version")).toEqual(["1.1"]);
    });
  });
});
