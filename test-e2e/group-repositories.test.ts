import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { closeNpmAgent, publish, publishDoc } from "../bench/npm-packages.js";
import { ensureMaven, jarProject, mavenScratch, mvn } from "./maven-client.js";
import { expectOk, run, scratchEnv } from "./npm-clients.js";
import { buildDist, ensurePythonClients, pythonEnv, type PythonClients } from "./pypi-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

const hex = (algo: string, data: Buffer | string) => createHash(algo).update(data).digest("hex");
const ABBREVIATED = "application/vnd.npm.install-v1+json";

interface Packument {
  "dist-tags": Record<string, string>;
  versions: Record<string, { dist: { tarball: string; integrity: string } }>;
}

/**
 * Group repositories: several repositories of one format behind one URL, asked in order. The
 * real clients install through a group (npm, pip, mvn) with keys granted the group's name only;
 * metadata is merged (npm packuments with dist-tags from the first member, PyPI project pages,
 * Maven's maven-metadata.xml with its checksums); a publish through a group lands in its first
 * hosted member; a proxy member fetches what no earlier member has (an npm proxy and a raw proxy
 * of repositories of this same suite, through its gateway).
 */
describe("group repositories", () => {
  let s: Suite;
  let py: PythonClients;
  let work: string;
  let admin: string;
  let n = 0;

  const call = (method: string, path: string, opts: Parameters<Suite["call"]>[2] = {}) => s.call(method, path, { key: admin, ...opts });
  const create = (body: object) => call("POST", "/api/repositories", { body });
  const group = async (name: string, format: string, members: string[]) => {
    const r = await create({ name, format, type: "group", members });
    if (r.status !== 201) throw new Error(`creating group ${name} answered ${r.status}: ${await r.text()}`);
    return r.json() as Promise<{ name: string; type: string; members: string[] }>;
  };
  /** A key granted `tokens` on the named repositories only. */
  const keyFor = async (label: string, tokens: string[], ...repositories: string[]) => (await s.mint({ label, grants: repositories.map((scope) => ({ scope, tokens })) })).key;
  const dir = (what: string) => {
    const d = join(work, `${what}-${++n}`);
    mkdirSync(d, { recursive: true });
    return d;
  };

  beforeAll(async () => {
    [s, py] = await Promise.all([startSuite({ env: { SVC_REPOSITORY_SCOPE_FROM_PATH: "true", SVC_PROXY_METADATA_TTL: "1s" } }), ensurePythonClients(), ensureMaven()]);
    work = mkdtempSync(join(inject("dataDir"), "group-repositories-"));
    admin = s.bootstrapKey;
    // Proxy members' upstreams are repositories of this suite, through its gateway (http on 127.0.0.1).
    expect((await call("PUT", "/api/settings/block-private-import-hosts", { body: { value: false } })).status).toBe(200);
  }, 900_000);
  afterAll(async () => {
    await closeNpmAgent().catch(() => {});
    await s?.stop();
  });

  /** Creates a proxy repository (retried: block-private-import-hosts reaches the artifacts service within moments). */
  const proxyOf = async (name: string, format: string, upstream: string) => {
    const password = await keyFor(`${name}-upstream`, ["read-only"], upstream);
    const credentials = format === "npm" ? { token: password } : { username: "proxy", password };
    await eventually(`proxy ${name} created`, async () => {
      const r = await create({ name, format, type: "proxy", upstream: { url: `${s.gatewayUrl}/repository/${upstream}/`, credentials } });
      return r.status === 201 ? r : undefined;
    });
  };

  describe("the admin API and raw files", () => {
    beforeAll(async () => {
      for (const name of ["raw-a", "raw-b"]) await s.createRepository(name, "raw");
      await s.createRepository("libs-maven", "maven");
      expect((await call("PUT", "/repository/raw-a/docs/x.txt", { body: "x from raw-a" })).status).toBe(201);
      expect((await call("PUT", "/repository/raw-b/docs/x.txt", { body: "x from raw-b" })).status).toBe(201);
      expect((await call("PUT", "/repository/raw-b/docs/y.txt", { body: "y from raw-b" })).status).toBe(201);
    });

    it("creates a group of hosted or proxy members of its format, in order, and refuses any other naming members", async () => {
      const refused = async (body: object, detail: string) => {
        const r = await create(body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(await r.json()).toMatchObject({ field: "members", detail: expect.stringContaining(detail) });
      };
      await refused({ name: "g", format: "raw", type: "group", members: [] }, "at least one repository");
      await refused({ name: "g", format: "raw", type: "group" }, "at least one repository");
      await refused({ name: "g", format: "raw", type: "group", members: ["raw-a", "nope"] }, "no repository named nope");
      await refused({ name: "g", format: "raw", type: "group", members: ["raw-a", "raw-a"] }, "names raw-a twice");
      await refused({ name: "g", format: "raw", type: "group", members: ["raw-a", "libs-maven"] }, "libs-maven is a maven repository");
      await refused({ name: "g", format: "raw", type: "hosted", members: ["raw-a"] }, 'only with "type": "group"');
      expect((await call("GET", "/api/repositories/g")).status).toBe(404);

      const made = await group("raw-all", "raw", ["raw-a", "raw-b"]);
      expect(made).toMatchObject({ name: "raw-all", type: "group", members: ["raw-a", "raw-b"], upstream: null, artifacts: 0 });
      await refused({ name: "g", format: "raw", type: "group", members: ["raw-all"] }, "raw-all is a group repository");
      const list = (await (await call("GET", "/api/repositories")).json()) as { name: string; type: string; members: string[] | null }[];
      expect(list.find((r) => r.name === "raw-all")).toMatchObject({ type: "group", members: ["raw-a", "raw-b"] });
      expect(list.find((r) => r.name === "raw-a")).toMatchObject({ type: "hosted", members: null });
      expect(await (await call("GET", "/api/repositories/raw-all")).json()).toMatchObject({ type: "group", members: ["raw-a", "raw-b"] });
      // A group holds no files: neither exported from nor into.
      const from = await call("POST", "/api/repositories/raw-all/export", { body: { target: "raw-a" } });
      expect(from.status).toBe(409);
      expect(await from.json()).toMatchObject({ detail: expect.stringContaining("raw-all is a group repository") });
      const into = await call("POST", "/api/repositories/raw-a/export", { body: { target: "raw-all" } });
      expect(into.status).toBe(400);
      expect(await into.json()).toMatchObject({ field: "target", detail: expect.stringContaining("raw-all is a group repository") });
    });

    it("serves each file from the first member that has it, to a key granted the group only", async () => {
      const reader = await keyFor("raw-reader", ["read-only"], "raw-all");
      const get = async (path: string, key = reader) => {
        const r = await s.call("GET", `/repository/raw-all/${path}`, { key });
        return { status: r.status, text: await r.text() };
      };
      expect(await get("docs/x.txt")).toEqual({ status: 200, text: "x from raw-a" });
      expect(await get("docs/y.txt")).toEqual({ status: 200, text: "y from raw-b" });
      const missing = await get("docs/z.txt");
      expect(missing.status).toBe(404);
      expect(missing.text).toContain("in any member of the group (raw-a, raw-b)");
      // Authorised against the group's name: a key granted a member only is refused through the group.
      const memberOnly = await keyFor("raw-a-reader", ["read-only"], "raw-a");
      expect((await get("docs/x.txt", memberOnly)).status).toBe(403);
    });

    it("a PUT through the group lands in its first hosted member; a DELETE through it is refused", async () => {
      const deployer = await keyFor("raw-deployer", ["deploy"], "raw-all");
      const put = await s.call("PUT", "/repository/raw-all/docs/new.txt", { key: deployer, body: "new through the group" });
      expect(put.status).toBe(201);
      expect(await put.json()).toMatchObject({ repository: "raw-a", path: "docs/new.txt" });
      expect(await (await call("GET", "/repository/raw-a/docs/new.txt")).text()).toBe("new through the group");
      expect((await call("GET", "/repository/raw-b/docs/new.txt")).status).toBe(404);
      const del = await s.call("DELETE", "/repository/raw-all/docs/x.txt", { key: deployer });
      expect(del.status).toBe(405);
      expect(await del.text()).toContain("raw-all is a group repository: nothing is removed through it");
      expect((await call("GET", "/repository/raw-a/docs/x.txt")).status).toBe(200);
    });

    it("a proxy member fetches what no earlier member has; a group of proxies only refuses a publish saying why", async () => {
      await proxyOf("raw-px", "raw", "raw-b");
      await group("raw-proxied", "raw", ["raw-px"]);
      const got = await call("GET", "/repository/raw-proxied/docs/y.txt");
      expect(got.status).toBe(200);
      expect(await got.text()).toBe("y from raw-b");
      // Fetched and kept by the proxy member.
      const held = (await (await call("GET", "/api/repositories/raw-px/files?prefix=docs/")).json()) as { path: string }[];
      expect(held.map((f) => f.path)).toEqual(["docs/y.txt"]);
      const put = await call("PUT", "/repository/raw-proxied/docs/nowhere.txt", { body: "x" });
      expect(put.status).toBe(405);
      expect(await put.text()).toContain("raw-proxied is a group repository with no hosted member (members: raw-px)");
    });

    it("members change with PUT .../members (in the new order); a member's removal is refused while a group names it, and forced takes it out", async () => {
      const set = await call("PUT", "/api/repositories/raw-all/members", { body: { members: ["raw-b", "raw-a"] } });
      expect(set.status).toBe(200);
      expect(await set.json()).toMatchObject({ members: ["raw-b", "raw-a"] });
      expect(await (await call("GET", "/repository/raw-all/docs/x.txt")).text()).toBe("x from raw-b");
      const bad = await call("PUT", "/api/repositories/raw-all/members", { body: { members: ["raw-b", "libs-maven"] } });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ field: "members" });
      expect((await call("PUT", "/api/repositories/raw-a/members", { body: { members: ["raw-b"] } })).status).toBe(409);

      const refused = await call("DELETE", "/api/repositories/raw-b?force=false");
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({ detail: expect.stringMatching(/raw-b holds 2 artifact|raw-b is a member of group raw-all/) });
      // An empty member: only the group holds it back.
      await s.createRepository("raw-empty", "raw");
      await call("PUT", "/api/repositories/raw-all/members", { body: { members: ["raw-b", "raw-a", "raw-empty"] } });
      const inGroup = await call("DELETE", "/api/repositories/raw-empty");
      expect(inGroup.status).toBe(409);
      expect(await inGroup.json()).toMatchObject({ detail: expect.stringContaining("raw-empty is a member of group raw-all") });
      expect((await call("DELETE", "/api/repositories/raw-empty?force=true")).status).toBe(204);
      expect(await (await call("GET", "/api/repositories/raw-all")).json()).toMatchObject({ members: ["raw-b", "raw-a"] });
    });
  });

  describe("on two nodes", () => {
    it("a group made, or its members changed, through one artifacts node is served by another within seconds", async () => {
      const replica = await s.startReplica("artifacts");
      const other = await s.startGateway({ SVC_ARTIFACTS_URL: replica.url });
      try {
        const through = (expected: string) =>
          eventually(`the other node serves ${expected}`, async () => {
            const r = await fetch(`${other.url}/repository/raw-late/docs/x.txt`, { headers: { "service-repository-key": admin } });
            const text = await r.text();
            return r.status === 200 && text === expected ? text : undefined;
          });
        await group("raw-late", "raw", ["raw-b"]);
        await through("x from raw-b");
        expect((await call("PUT", "/api/repositories/raw-late/members", { body: { members: ["raw-a", "raw-b"] } })).status).toBe(200);
        await through("x from raw-a");
      } finally {
        await other.stop();
        await replica.stop();
      }
    });
  });

  describe("npm", () => {
    let reader: string;
    let deployer: string;
    const registry = (repository: string) => `${s.gatewayUrl}/repository/${repository}/`;
    /** A scratch npm configuration for `registry` with `token`, and a project to install into. */
    const scratch = (reg: string, token: string) => {
      const d = dir("npm");
      mkdirSync(join(d, "project"), { recursive: true });
      writeFileSync(join(d, "npmrc"), `registry=${reg}\n${reg.replace(/^https?:/, "")}:_authToken=${token}\n`);
      writeFileSync(join(d, "project", "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
      return { project: join(d, "project"), env: scratchEnv(d) };
    };
    /** npm install of `specs` through `group` into a clean project and cache; answers what got installed. */
    const install = async (grp: string, ...specs: string[]) => {
      const c = scratch(registry(grp), reader);
      expectOk(await run("npm", ["install", "--no-package-lock", ...specs], { cwd: c.project, env: c.env }));
      return (name: string) => ({
        version: (JSON.parse(readFileSync(join(c.project, "node_modules", name, "package.json"), "utf8")) as { version: string }).version,
        code: readFileSync(join(c.project, "node_modules", name, "index.js"), "utf8"),
      });
    };
    /** npm publish of a package whose index.js says `says`, to `reg` with `token`. */
    const npmPublish = async (reg: string, token: string, name: string, version: string, says: string) => {
      const c = scratch(reg, token);
      writeFileSync(join(c.project, "package.json"), JSON.stringify({ name, version, main: "index.js", license: "MIT" }));
      writeFileSync(join(c.project, "index.js"), `module.exports = ${JSON.stringify(says)};\n`);
      return run("npm", ["publish"], { cwd: c.project, env: c.env });
    };
    const packument = async (grp: string, name: string, accept = ABBREVIATED) => {
      const r = await s.call("GET", `/repository/${grp}/${name}`, { key: reader, headers: { accept } });
      expect(r.status).toBe(200);
      return { etag: r.headers.get("etag")!, doc: (await r.json()) as Packument };
    };

    beforeAll(async () => {
      for (const name of ["npm-a", "npm-b", "npm-up"]) await s.createRepository(name, "npm");
      await publish(registry("npm-a"), admin, publishDoc(registry("npm-a"), "gp-lib", "1.0.0"));
      // npm-b has its own 1.0.0 (other bytes) and a newer 1.1.0 tagged latest there.
      expectOk(await npmPublish(registry("npm-b"), admin, "gp-lib", "1.0.0", "gp-lib 1.0.0 of npm-b"));
      await publish(registry("npm-b"), admin, publishDoc(registry("npm-b"), "gp-lib", "1.1.0"));
      await publish(registry("npm-b"), admin, publishDoc(registry("npm-b"), "gp-only-b", "2.0.0"));
      await group("npm-all", "npm", ["npm-a", "npm-b"]);
      reader = await keyFor("npm-reader", ["read-only"], "npm-all", "npm-mix");
      deployer = await keyFor("npm-deployer", ["deploy"], "npm-all");
    }, 600_000);

    it("merges the members' documents: versions of both, the first member's version wins, dist-tags from the first; tarballs under the group", async () => {
      const { etag, doc } = await packument("npm-all", "gp-lib");
      expect(Object.keys(doc.versions).sort()).toEqual(["1.0.0", "1.1.0"]);
      expect(doc["dist-tags"]).toEqual({ latest: "1.0.0" });
      const a = (await (await call("GET", "/repository/npm-a/gp-lib", { headers: { accept: ABBREVIATED } })).json()) as Packument;
      expect(doc.versions["1.0.0"]!.dist.integrity).toBe(a.versions["1.0.0"]!.dist.integrity);
      for (const v of ["1.0.0", "1.1.0"]) expect(doc.versions[v]!.dist.tarball).toBe(`${registry("npm-all")}gp-lib/-/gp-lib-${v}.tgz`);
      // An unchanged document is answered 304; the full document merges too.
      expect((await s.call("GET", "/repository/npm-all/gp-lib", { key: reader, headers: { accept: ABBREVIATED, "if-none-match": etag } })).status).toBe(304);
      const full = await packument("npm-all", "gp-lib", "application/json");
      expect(Object.keys(full.doc.versions).sort()).toEqual(["1.0.0", "1.1.0"]);
      expect((await (await s.call("GET", "/repository/npm-all/gp-lib/latest", { key: reader })).json()) as { version: string }).toMatchObject({ version: "1.0.0" });
      expect((await (await s.call("GET", "/repository/npm-all/-/package/gp-lib/dist-tags", { key: reader })).json()) as object).toEqual({ latest: "1.0.0" });
      expect((await s.call("GET", "/repository/npm-all/gp-none", { key: reader })).status).toBe(404);
    });

    it("npm installs through the group: latest from the first member's tags, a version only the second has, and the first member's bytes for a version both have", async () => {
      const latest = await install("npm-all", "gp-lib", "gp-only-b");
      expect(latest("gp-lib")).toEqual({ version: "1.0.0", code: 'module.exports = "gp-lib@1.0.0";\n' });
      expect(latest("gp-only-b").version).toBe("2.0.0");
      expect((await install("npm-all", "gp-lib@^1.1.0"))("gp-lib").version).toBe("1.1.0");
    });

    it("npm publish through the group lands in its first hosted member", async () => {
      expectOk(await npmPublish(registry("npm-all"), deployer, "gp-new", "1.0.0", "published through the group"));
      expect((await call("GET", "/repository/npm-a/gp-new")).status).toBe(200);
      expect((await call("GET", "/repository/npm-b/gp-new")).status).toBe(404);
      expect((await install("npm-all", "gp-new"))("gp-new").code).toContain("published through the group");
    });

    it("with an npm proxy member: what no earlier member has is fetched through the proxy, its versions merged after the hosted member's", async () => {
      await publish(registry("npm-up"), admin, publishDoc(registry("npm-up"), "gp-up", "1.0.0"));
      await publish(registry("npm-up"), admin, publishDoc(registry("npm-up"), "gp-lib", "3.0.0"));
      await proxyOf("npm-px", "npm", "npm-up");
      await group("npm-mix", "npm", ["npm-a", "npm-px"]);
      const { doc } = await packument("npm-mix", "gp-lib");
      expect(Object.keys(doc.versions).sort()).toEqual(["1.0.0", "3.0.0"]);
      expect(doc["dist-tags"]).toEqual({ latest: "1.0.0" });
      expect(doc.versions["3.0.0"]!.dist.tarball).toBe(`${registry("npm-mix")}gp-lib/-/gp-lib-3.0.0.tgz`);
      const got = await install("npm-mix", "gp-up", "gp-lib@3.0.0");
      expect(got("gp-up").version).toBe("1.0.0");
      expect(got("gp-lib").version).toBe("3.0.0");
      expect((await install("npm-mix", "gp-lib"))("gp-lib").version).toBe("1.0.0");
      // The proxy fetched only what the hosted member lacked.
      const fetched = (await (await call("GET", "/api/repositories/npm-px/files")).json()) as { path: string }[];
      expect(fetched.map((f) => f.path).sort()).toEqual(["gp-lib/-/gp-lib-3.0.0.tgz", "gp-up/-/gp-up-1.0.0.tgz"]);
      // An import goes into a hosted repository, never a group.
      const imported = await call("POST", "/api/repositories/npm-px/imports", { body: { packages: ["gp-up"], target: "npm-mix" } });
      expect(imported.status).toBe(400);
      expect(await imported.json()).toMatchObject({ field: "target", detail: expect.stringContaining("npm-mix is a group repository") });
    });
  });

  describe("npm, with versions the screening gate holds", () => {
    it("a member's held version stays hidden through the group, tags repaired; a member whose every version is held gives no dist-tags", async () => {
      const registry = `${s.gatewayUrl}/repository/npm-a/`;
      await publish(registry, admin, publishDoc(registry, "gp-held", "1.0.0"));
      await publish(registry, admin, publishDoc(registry, "gp-held", "2.0.0"));
      await publish(registry, admin, publishDoc(registry, "gp-gone", "1.0.0"));
      const b = `${s.gatewayUrl}/repository/npm-b/`;
      await publish(b, admin, publishDoc(b, "gp-held", "1.5.0"));
      await publish(b, admin, publishDoc(b, "gp-gone", "1.1.0"));
      // The deny list holds the versions it names that are stored already.
      for (const [name, versions] of [["gp-held", "2.0.0"], ["gp-gone", "1.0.0"]]) {
        expect((await call("POST", "/api/deny-list", { body: { ecosystem: "npm", name, versions, reason: "e2e: a bad build" } })).status).toBe(201);
      }
      await eventually("both versions held", async () => {
        const held = (await (await call("GET", "/api/held?repository=npm-a")).json()) as { path: string }[];
        const paths = held.map((h) => h.path);
        return paths.includes("gp-held/-/gp-held-2.0.0.tgz") && paths.includes("gp-gone/-/gp-gone-1.0.0.tgz") ? paths : undefined;
      });
      const reader = await keyFor("npm-held-reader", ["read-only"], "npm-all");
      const doc = async (name: string) => (await (await s.call("GET", `/repository/npm-all/${name}`, { key: reader, headers: { accept: ABBREVIATED } })).json()) as Packument;
      const held = await doc("gp-held");
      expect(Object.keys(held.versions).sort()).toEqual(["1.0.0", "1.5.0"]);
      expect(held["dist-tags"]).toEqual({ latest: "1.0.0" });
      const gone = await doc("gp-gone");
      expect(Object.keys(gone.versions)).toEqual(["1.1.0"]);
      expect(gone["dist-tags"]).toEqual({ latest: "1.1.0" });
      const tarball = await s.call("GET", "/repository/npm-all/gp-held/-/gp-held-2.0.0.tgz", { key: reader });
      expect(tarball.status).toBe(403);
      expect(await tarball.text()).toContain("is held");
    });
  });

  describe("pypi", () => {
    let reader: string;
    const index = (grp: string, key: string) => `${s.gatewayUrl.replace("://", `://x:${key}@`)}/repository/${grp}/simple/`;
    const twine = (url: string, password: string, files: string[]) => {
      const d = dir("twine");
      return run(py.twine, ["upload", "--non-interactive", "--disable-progress-bar", ...files], { cwd: d, env: { ...pythonEnv(d), TWINE_REPOSITORY_URL: url, TWINE_USERNAME: "__token__", TWINE_PASSWORD: password } });
    };
    const pip = async (args: string[]) => {
      const d = dir("pip");
      expectOk(await run(py.python, ["-m", "venv", join(d, "venv")], { cwd: d, env: pythonEnv(d) }));
      const r = await run(join(d, "venv", "bin", "pip"), [...args, "--isolated", "--no-cache-dir"], { cwd: d, env: pythonEnv(d) });
      return { r, d, python: join(d, "venv", "bin", "python") };
    };
    let older: Awaited<ReturnType<typeof buildDist>>;
    let newer: Awaited<ReturnType<typeof buildDist>>;

    beforeAll(async () => {
      for (const name of ["pypi-a", "pypi-b"]) await s.createRepository(name, "pypi");
      [older, newer] = [await buildDist(work, py, { name: "gp-py", version: "1.0" }), await buildDist(work, py, { name: "gp-py", version: "1.1" })];
      expectOk(await twine(`${s.gatewayUrl}/repository/pypi-a/`, admin, [older.wheel]));
      expectOk(await twine(`${s.gatewayUrl}/repository/pypi-b/`, admin, [newer.wheel, newer.sdist]));
      await group("pypi-all", "pypi", ["pypi-a", "pypi-b"]);
      reader = await keyFor("pypi-reader", ["read-only"], "pypi-all");
    }, 600_000);

    it("the group's simple index merges its members' pages, each link pointing at the group", async () => {
      const basic = { authorization: `Basic ${Buffer.from(`__token__:${reader}`).toString("base64")}` };
      const page = await s.call("GET", "/repository/pypi-all/simple/gp-py/", { headers: basic });
      expect(page.status).toBe(200);
      const html = await page.text();
      for (const f of [older.wheel, newer.wheel, newer.sdist]) expect(html).toContain(`#sha256=${hex("sha256", readFileSync(f))}`);
      expect(await (await s.call("GET", "/repository/pypi-all/simple/", { headers: basic })).text()).toContain('<a href="gp-py/">gp-py</a>');
      const json = (await (await s.call("GET", "/repository/pypi-all/simple/gp-py/", { headers: { ...basic, accept: "application/vnd.pypi.simple.v1+json" } })).json()) as { files: { filename: string; url: string }[] };
      const link = json.files.find((f) => f.filename === basename(older.wheel))!;
      const url = new URL(link.url, `${s.gatewayUrl}/repository/pypi-all/simple/gp-py/`);
      expect(url.pathname).toBe(`/repository/pypi-all/packages/gp-py/1.0/${basename(older.wheel)}`);
      const file = await s.call("GET", url.pathname, { headers: basic });
      expect(file.status).toBe(200);
      expect(Buffer.from(await file.arrayBuffer())).toEqual(readFileSync(older.wheel));
    });

    it("pip downloads the newest version through the group and installs a pinned older one from the first member", async () => {
      const download = await pip(["download", "--no-deps", "--index-url", index("pypi-all", reader), "-d", "out", "gp-py"]);
      expectOk(download.r);
      expect(readdirSync(join(download.d, "out"))).toContain(basename(newer.wheel));
      const pinned = await pip(["install", "--index-url", index("pypi-all", reader), "gp-py==1.0"]);
      expectOk(pinned.r);
      expect((await run(pinned.python, ["-c", "import gp_py; print(gp_py.VERSION)"], { cwd: pinned.d, env: pythonEnv(pinned.d) })).stdout.trim()).toBe("gp-py@1.0");
    });

    it("twine upload through the group lands in its first hosted member", async () => {
      const deployer = await keyFor("pypi-deployer", ["deploy"], "pypi-all");
      const dist = await buildDist(work, py, { name: "gp-new-py", version: "0.1" });
      expectOk(await twine(`${s.gatewayUrl}/repository/pypi-all/`, deployer, [dist.wheel]));
      expect((await call("GET", "/repository/pypi-a/simple/gp-new-py/")).status).toBe(200);
      expect((await call("GET", "/repository/pypi-b/simple/gp-new-py/")).status).toBe(404);
    });

    it("with a PyPI proxy member: its page merged in, and what no earlier member has fetched through it", async () => {
      await proxyOf("pypi-px", "pypi", "pypi-b");
      await group("pypi-mix", "pypi", ["pypi-a", "pypi-px"]);
      const mixReader = await keyFor("pypi-mix-reader", ["read-only"], "pypi-mix");
      const basic = { authorization: `Basic ${Buffer.from(`__token__:${mixReader}`).toString("base64")}` };
      const html = await (await s.call("GET", "/repository/pypi-mix/simple/gp-py/", { headers: basic })).text();
      for (const f of [older.wheel, newer.wheel, newer.sdist]) expect(html).toContain(basename(f));
      const download = await pip(["download", "--no-deps", "--only-binary", ":all:", "--index-url", index("pypi-mix", mixReader), "-d", "out", "gp-py"]);
      expectOk(download.r);
      expect(readdirSync(join(download.d, "out"))).toContain(basename(newer.wheel));
      const fetched = (await (await call("GET", "/api/repositories/pypi-px/files")).json()) as { path: string }[];
      expect(fetched.map((f) => f.path)).toEqual([`packages/gp-py/1.1/${basename(newer.wheel)}`]);
    });
  });

  describe("maven", () => {
    const ID = "svc";
    const url = (repository: string) => `${s.gatewayUrl}/repository/${repository}`;
    const deploy = async (repository: string, key: string, version: string) => {
      const project = jarProject(dir(`glib-${version}`), { groupId: "com.example", artifactId: "glib", version, url: url(repository), id: ID, greeting: `glib ${version}` });
      const r = await mvn(mavenScratch(dir("m2"), { id: ID, repository, key }), ["deploy"], project);
      return { r, jar: join(project, "target", `glib-${version}.jar`) };
    };
    let reader: string;

    beforeAll(async () => {
      for (const name of ["maven-a", "maven-b"]) await s.createRepository(name, "maven");
      expectOk((await deploy("maven-a", admin, "1.0")).r);
      expectOk((await deploy("maven-b", admin, "1.1")).r);
      await group("maven-all", "maven", ["maven-a", "maven-b"]);
      reader = await keyFor("maven-reader", ["read-only"], "maven-all");
    }, 600_000);

    it("an artifact's maven-metadata.xml merges its members' versions, with checksums of the merged document", async () => {
      const get = async (path: string) => {
        const r = await s.call("GET", `/repository/maven-all/${path}`, { key: reader });
        return { status: r.status, text: await r.text() };
      };
      const meta = await get("com/example/glib/maven-metadata.xml");
      expect(meta.status).toBe(200);
      expect(meta.text).toMatch(/<version>1\.0<\/version>\s*<version>1\.1<\/version>/);
      expect(meta.text).toContain("<release>1.1</release>");
      for (const algo of ["sha1", "md5", "sha256"]) expect((await get(`com/example/glib/maven-metadata.xml.${algo}`)).text).toBe(hex(algo, meta.text));
      expect((await get("com/example/glib/1.1/glib-1.1.jar.sha1")).text).toBe(hex("sha1", (await (await call("GET", "/repository/maven-b/com/example/glib/1.1/glib-1.1.jar")).arrayBuffer().then(Buffer.from))));
      expect((await get("com/example/none/maven-metadata.xml")).status).toBe(404);
    });

    it("mvn resolves a version range through the group from the merged metadata, the jar from the member that has it", async () => {
      const m = mavenScratch(dir("consumer-m2"), { id: ID, repository: "maven-all", key: reader });
      const consumer = jarProject(dir("consumer"), { groupId: "com.example", artifactId: "consumer", version: "1.0", url: url("maven-all"), id: ID, dependsOn: "com.example:glib:[1.0,2.0)", uses: "C_glib" });
      expectOk(await mvn(m, ["package"], consumer));
      expect(existsSync(join(consumer, "target", "consumer-1.0.jar"))).toBe(true);
      const fromB = readFileSync(join(m.local, "com/example/glib/1.1/glib-1.1.jar"));
      expect(hex("sha256", fromB)).toBe(hex("sha256", Buffer.from(await (await call("GET", "/repository/maven-b/com/example/glib/1.1/glib-1.1.jar")).arrayBuffer())));
      const get = mavenScratch(dir("get-m2"), { id: ID, repository: "maven-all", key: reader });
      expectOk(await mvn(get, ["dependency:get", `-DremoteRepositories=${ID}::default::${url("maven-all")}`, "-Dartifact=com.example:glib:1.0", "-Dtransitive=false"], get.dir));
      expect(existsSync(join(get.local, "com/example/glib/1.0/glib-1.0.jar"))).toBe(true);
    });

    it("mvn deploy through the group lands in its first hosted member", async () => {
      const deployer = await keyFor("maven-deployer", ["deploy"], "maven-all");
      const { r, jar } = await deploy("maven-all", deployer, "1.2");
      expectOk(r);
      const stored = await call("GET", "/repository/maven-a/com/example/glib/1.2/glib-1.2.jar");
      expect(stored.status).toBe(200);
      expect(Buffer.from(await stored.arrayBuffer())).toEqual(readFileSync(jar));
      expect((await call("GET", "/repository/maven-b/com/example/glib/1.2/glib-1.2.jar")).status).toBe(404);
      expect(await (await call("GET", "/repository/maven-all/com/example/glib/maven-metadata.xml")).text()).toContain("<version>1.2</version>");
    });

    it("with a maven proxy member: its maven-metadata.xml merged in, and what no earlier member has fetched through it", async () => {
      await proxyOf("maven-px", "maven", "maven-b");
      await group("maven-mix", "maven", ["maven-a", "maven-px"]);
      const mixReader = await keyFor("maven-mix-reader", ["read-only"], "maven-mix");
      const meta = await (await s.call("GET", "/repository/maven-mix/com/example/glib/maven-metadata.xml", { key: mixReader })).text();
      for (const v of ["1.0", "1.1", "1.2"]) expect(meta).toContain(`<version>${v}</version>`);
      const m = mavenScratch(dir("mix-m2"), { id: ID, repository: "maven-mix", key: mixReader });
      expectOk(await mvn(m, ["dependency:get", `-DremoteRepositories=${ID}::default::${url("maven-mix")}`, "-Dartifact=com.example:glib:1.1", "-Dtransitive=false"], m.dir));
      expect(existsSync(join(m.local, "com/example/glib/1.1/glib-1.1.jar"))).toBe(true);
      const fetched = (await (await call("GET", "/api/repositories/maven-px/files")).json()) as { path: string }[];
      expect(fetched.map((f) => f.path)).toContain("com/example/glib/1.1/glib-1.1.jar");
      // What the hosted member has is not fetched.
      expect(fetched.map((f) => f.path).filter((p) => p.includes("/1.0/"))).toEqual([]);
    });
  });
});
