import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk, run, scratchEnv, startNpmSuite, type Clients, type Run } from "./npm-clients.js";
import type { Suite } from "./suite.js";

/**
 * npm, pnpm, yarn 1 and yarn 4, unmodified, against an npm repository through the gateway with
 * minted keys. The repository is the one created at first start (svc.repository-format=npm),
 * and keys are granted that repository only: the clients cannot send Service-Repository-Name,
 * so svc.repository-scope-from-path is on.
 */
describe("npm repositories with the real clients", () => {
  let s: Suite;
  let clients: Clients;
  let work: string;
  let registry: string;
  let deployer: string;
  let reader: string;
  let n = 0;

  beforeAll(async () => {
    ({ suite: s, clients, work, registry, deployer, reader } = await startNpmSuite("npm-clients-"));
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** A fresh folder with an .npmrc naming the registry and (when given) the key as `_authToken`. */
  const scratch = (key?: string) => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(join(dir, "project"), { recursive: true });
    const host = registry.replace(/^https?:/, "");
    const npmrc = [`registry=${registry}`, ...(key ? [`${host}:_authToken=${key}`, "always-auth=true"] : [])].join("\n");
    writeFileSync(join(dir, "npmrc"), `${npmrc}\n`);
    writeFileSync(join(dir, "project", ".npmrc"), `${npmrc}\n`);
    return { dir, project: join(dir, "project"), env: scratchEnv(dir) };
  };

  /** A package folder ready to publish. */
  const pkg = (name: string, version: string, extra: object = {}) => {
    const dir = join(work, `pkg-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version, main: "index.js", license: "MIT", ...extra }));
    writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(`${name}@${version}`)};\n`);
    return dir;
  };

  const npm = (args: string[], where: { cwd: string; env: Record<string, string> }): Promise<Run> => run(clients.npm, args, where);
  const publish = async (dir: string, key: string, args: string[] = []) => npm(["publish", ...args], { cwd: dir, env: scratch(key).env });

  it("npm publishes a package and a scoped package, and npm installs both in a clean project", async () => {
    expectOk(await publish(pkg("left-pad-e2e", "1.0.0"), deployer));
    expectOk(await publish(pkg("@acme/util", "1.0.0"), deployer));
    const c = scratch(reader);
    writeFileSync(join(c.project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    expectOk(await npm(["install", "left-pad-e2e@1.0.0", "@acme/util"], { cwd: c.project, env: c.env }));
    expect(readFileSync(join(c.project, "node_modules", "left-pad-e2e", "index.js"), "utf8")).toContain("left-pad-e2e@1.0.0");
    expect(readFileSync(join(c.project, "node_modules", "@acme", "util", "index.js"), "utf8")).toContain("@acme/util@1.0.0");
    const lock = JSON.parse(readFileSync(join(c.project, "package-lock.json"), "utf8")) as { packages: Record<string, { resolved: string }> };
    expect(lock.packages["node_modules/@acme/util"]!.resolved).toBe(`${registry}@acme/util/-/util-1.0.0.tgz`);
  });

  type Scratch = ReturnType<typeof scratch>;
  // --ignore-workspace: the scratch folder lies inside this repository's own pnpm workspace.
  const pnpmInstall = (c: Scratch) => run(clients.pnpm, ["install", "--ignore-workspace", "--store-dir", join(c.dir, "pnpm-store")], { cwd: c.project, env: c.env });
  const yarn1Install = (c: Scratch) => run(clients.yarn1, ["install", "--non-interactive", "--registry", registry], { cwd: c.project, env: c.env });
  /** yarn 4 reads its registry and key from the project's .yarnrc.yml. */
  const yarn4Install = (c: Scratch, key: string) => {
    const host = new URL(registry).hostname;
    writeFileSync(
      join(c.project, ".yarnrc.yml"),
      [`npmRegistryServer: "${registry}"`, `npmAuthToken: "${key}"`, "npmAlwaysAuth: true", `unsafeHttpWhitelist: ["${host}"]`, "nodeLinker: node-modules", "enableTelemetry: false"].join("\n") + "\n",
    );
    writeFileSync(join(c.project, "yarn.lock"), "");
    return run(process.execPath, [clients.yarn4, "install"], { cwd: c.project, env: { ...c.env, YARN_ENABLE_IMMUTABLE_INSTALLS: "false" } });
  };

  /** A clean consumer project depending on the two packages published above. */
  const consumer = (key: string) => {
    const c = scratch(key);
    writeFileSync(join(c.project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, dependencies: { "left-pad-e2e": "1.0.0", "@acme/util": "^1.0.0" } }));
    return c;
  };
  const installed = (project: string) => {
    expect(readFileSync(join(project, "node_modules", "left-pad-e2e", "index.js"), "utf8")).toContain("left-pad-e2e@1.0.0");
    expect(readFileSync(join(project, "node_modules", "@acme", "util", "index.js"), "utf8")).toContain("@acme/util@1.0.0");
  };

  it("pnpm installs them in a clean project", async () => {
    const c = consumer(reader);
    expectOk(await pnpmInstall(c));
    installed(c.project);
  });

  it("yarn 1 installs them in a clean project", async () => {
    const c = consumer(reader);
    expectOk(await yarn1Install(c));
    installed(c.project);
  });

  it("yarn 4 installs them in a clean project", async () => {
    const c = consumer(reader);
    expectOk(await yarn4Install(c, reader));
    installed(c.project);
  });

  it("npm installs again from its cache: the registry confirms its copies of the documents (304) instead of sending them again", async () => {
    const c = consumer(reader);
    const where = { cwd: c.project, env: c.env };
    // No lock file: with one npm would not read the documents at all.
    expectOk(await npm(["install", "--no-package-lock"], where));
    rmSync(join(c.project, "node_modules"), { recursive: true, force: true });
    const again = await npm(["install", "--no-package-lock", "--loglevel=http"], where);
    expectOk(again);
    installed(c.project);
    for (const name of ["left-pad-e2e", "@acme%2futil"]) expect(again.output).toMatch(new RegExp(`GET 200 \\S+/${name} \\d+ms \\(cache revalidated\\)`, "i"));
    expect(again.output).not.toMatch(/cache updated/);
  });

  it("npm whoami names the key, and npm view shows what was published", async () => {
    const c = scratch(deployer);
    const who = await npm(["whoami"], { cwd: c.project, env: c.env });
    expectOk(who);
    expect(who.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);
    const view = await npm(["view", "@acme/util", "--json"], { cwd: c.project, env: scratch(reader).env });
    expectOk(view);
    expect(JSON.parse(view.stdout)).toMatchObject({ name: "@acme/util", version: "1.0.0", "dist-tags": { latest: "1.0.0" } });
  });

  it("dist-tags: add, list and remove", async () => {
    expectOk(await publish(pkg("@acme/util", "1.1.0"), deployer, ["--tag", "next"]));
    const c = scratch(deployer);
    const where = { cwd: c.project, env: c.env };
    expect((await npm(["dist-tag", "ls", "@acme/util"], where)).stdout).toMatch(/latest: 1\.0\.0[\s\S]*next: 1\.1\.0/);
    expectOk(await npm(["dist-tag", "add", "@acme/util@1.1.0", "beta"], where));
    expect((await npm(["dist-tag", "ls", "@acme/util"], where)).stdout).toContain("beta: 1.1.0");
    expectOk(await npm(["dist-tag", "rm", "@acme/util", "beta"], where));
    expect((await npm(["dist-tag", "ls", "@acme/util"], where)).stdout).not.toContain("beta");
    // The abbreviated document installs read carries the tags too.
    const doc = await s.call("GET", "/repository/npm/@acme%2Futil", { key: reader, headers: { accept: "application/vnd.npm.install-v1+json" } });
    expect(doc.headers.get("content-type")).toMatch(/^application\/vnd\.npm\.install-v1\+json/);
    expect(await doc.json()).toMatchObject({ name: "@acme/util", "dist-tags": { latest: "1.0.0", next: "1.1.0" }, versions: { "1.1.0": { version: "1.1.0", dist: { tarball: `${registry}@acme/util/-/util-1.1.0.tgz` } } } });
  });

  it("npm deprecate marks a version, and an empty message clears it", async () => {
    const c = scratch(deployer);
    const where = { cwd: c.project, env: c.env };
    expectOk(await npm(["deprecate", "@acme/util@1.0.0", "use 1.1.0"], where));
    const view = async () => JSON.parse((await npm(["view", "@acme/util@1.0.0", "deprecated", "--json"], where)).stdout || "null") as unknown;
    expect(await view()).toBe("use 1.1.0");
    expectOk(await npm(["deprecate", "@acme/util@1.0.0", ""], where));
    expect(await view()).toBeNull();
  });

  it("a published version is immutable: npm refuses, and the registry answers npm's conflict error", async () => {
    const again = await publish(pkg("left-pad-e2e", "1.0.0", { description: "changed" }), deployer);
    expect(again.code).not.toBe(0);
    // npm reads the document first and refuses by itself; a client that does not is refused by the registry.
    expect(again.output).toMatch(/cannot publish over the previously published versions?: 1\.0\.0/i);
    const tgz = Buffer.from("not the published tarball");
    const doc = {
      name: "left-pad-e2e",
      versions: { "1.0.0": { name: "left-pad-e2e", version: "1.0.0" } },
      "dist-tags": { latest: "1.0.0" },
      _attachments: { "left-pad-e2e-1.0.0.tgz": { content_type: "application/octet-stream", data: tgz.toString("base64"), length: tgz.length } },
    };
    const put = await s.call("PUT", "/repository/npm/left-pad-e2e", { key: deployer, body: doc, headers: { "user-agent": "npm/11.0.0 node/v20" } });
    expect(put.status).toBe(409);
    expect(await put.json()).toEqual({ error: "cannot publish over the previously published version 1.0.0 of left-pad-e2e: published versions are immutable" });
  });

  it("refuses a publish without a key and with a read-only key, and npm shows why", async () => {
    const keyless = await publish(pkg("keyless-e2e", "1.0.0"), "");
    expect(keyless.code).not.toBe(0);
    expect(keyless.output).toMatch(/401|ENEEDAUTH|need auth/i);
    const readOnly = await publish(pkg("read-only-e2e", "1.0.0"), reader);
    expect(readOnly.code).not.toBe(0);
    expect(readOnly.output).toMatch(/403[\s\S]*this key does not hold repository:write on npm/);
    expect((await s.call("GET", "/repository/npm/read-only-e2e", { key: reader })).status).toBe(404);
  });

  it("a package of many versions: its document comes gzipped, and npm, pnpm, yarn 1 and yarn 4 install from it", async () => {
    // 80 earlier versions, published straight (their tarballs are never installed), then a real one.
    for (let i = 0; i < 80; i++) {
      const version = `0.${i}.0`;
      const tgz = gzipSync(Buffer.from(`many-e2e@${version}`));
      const manifest = { name: "many-e2e", version, dist: { shasum: createHash("sha1").update(tgz).digest("hex") } };
      const body = { name: "many-e2e", "dist-tags": { latest: version }, versions: { [version]: manifest }, _attachments: { [`many-e2e-${version}.tgz`]: { data: tgz.toString("base64"), length: tgz.length } } };
      const res = await s.call("PUT", "/repository/npm/many-e2e", { key: deployer, body });
      expect(res.status, await res.text()).toBe(201);
    }
    expectOk(await publish(pkg("many-e2e", "1.0.0"), deployer));
    // The abbreviated document as npm asks for it: gzipped.
    const encoding = await new Promise<string | undefined>((resolve, reject) => {
      const u = new URL(registry);
      const req = request(
        { host: u.hostname, port: u.port, path: `${u.pathname}many-e2e`, headers: { authorization: `Bearer ${reader}`, accept: "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*", "accept-encoding": "gzip,deflate" } },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode === 200 ? res.headers["content-encoding"] : `status ${res.statusCode}`));
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(encoding).toBe("gzip");

    const project = (key: string) => {
      const c = scratch(key);
      writeFileSync(join(c.project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, dependencies: { "many-e2e": "^1.0.0" } }));
      return c;
    };
    const got = (c: { project: string }) => expect(readFileSync(join(c.project, "node_modules", "many-e2e", "index.js"), "utf8")).toContain("many-e2e@1.0.0");
    const viaNpm = project(reader);
    expectOk(await npm(["install"], { cwd: viaNpm.project, env: viaNpm.env }));
    got(viaNpm);
    for (const install of [pnpmInstall, yarn1Install, (c: Scratch) => yarn4Install(c, reader)]) {
      const c = project(reader);
      expectOk(await install(c));
      got(c);
    }
  });

  it("two publishes of different versions of one package at the same moment both land", async () => {
    // Tagged: npm 11 will not move `latest` implicitly to a version lower than one already published.
    const [a, b] = await Promise.all([publish(pkg("race-e2e", "1.0.0"), deployer, ["--tag", "one"]), publish(pkg("race-e2e", "2.0.0"), deployer, ["--tag", "two"])]);
    expectOk(a);
    expectOk(b);
    const doc = (await (await s.call("GET", "/repository/npm/race-e2e", { key: reader })).json()) as { versions: Record<string, unknown>; "dist-tags": Record<string, string> };
    expect(Object.keys(doc.versions).sort()).toEqual(["1.0.0", "2.0.0"]);
    expect(doc["dist-tags"]).toMatchObject({ one: "1.0.0", two: "2.0.0" });
  });

  it("npm unpublish removes a version, then the whole package", async () => {
    expectOk(await publish(pkg("gone-e2e", "1.0.0"), deployer));
    expectOk(await publish(pkg("gone-e2e", "1.0.1"), deployer));
    const c = scratch(deployer);
    const where = { cwd: c.project, env: c.env };
    expectOk(await npm(["unpublish", "gone-e2e@1.0.1"], where));
    const doc = (await (await s.call("GET", "/repository/npm/gone-e2e", { key: reader })).json()) as { versions: Record<string, unknown>; "dist-tags": Record<string, string> };
    expect(Object.keys(doc.versions)).toEqual(["1.0.0"]);
    expect(doc["dist-tags"].latest).toBe("1.0.0");
    expect((await s.call("GET", "/repository/npm/gone-e2e/-/gone-e2e-1.0.1.tgz", { key: reader })).status).toBe(404);
    expectOk(await npm(["unpublish", "gone-e2e", "--force"], where));
    expect((await s.call("GET", "/repository/npm/gone-e2e", { key: reader })).status).toBe(404);
    expect((await s.call("GET", "/repository/npm/gone-e2e/-/gone-e2e-1.0.0.tgz", { key: reader })).status).toBe(404);
  });
});
