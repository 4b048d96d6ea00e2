import { execFile, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import type { ExportView } from "@svc/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportCalls } from "./export-harness.js";
import { freshName as fresh, startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents, eventually } from "./upstream.js";


const root = resolve(import.meta.dirname, "..");
const CLI = join(root, "packages", "cli", "dist", "svc.mjs");

/** The `svc` client's single bundled file, built as the project's set-up builds it (a no-op when up to date). */
const buildCli = () =>
  new Promise<void>((res, rej) => {
    const b = spawn(process.execPath, [join(root, "packages", "cli", "scripts", "build-cli.mjs")], { stdio: "inherit" });
    b.on("error", rej);
    b.on("close", (code) => (code === 0 ? res() : rej(new Error(`building the svc client exited ${code}`))));
  });

/** An npm publish document, as `npm publish` sends it. */
function npmDoc(name: string, version: string, extra: { tags?: Record<string, string>; deprecated?: string } = {}) {
  const tgz = Buffer.from(`tarball of ${name}@${version} ${randomBytes(8).toString("hex")}`);
  const file = `${name.slice(name.lastIndexOf("/") + 1)}-${version}.tgz`;
  return {
    tgz,
    doc: {
      name,
      versions: { [version]: { name, version, description: `${name} ${version}`, dist: { shasum: createHash("sha1").update(tgz).digest("hex") }, ...(extra.deprecated ? { deprecated: extra.deprecated } : {}) } },
      "dist-tags": extra.tags ?? { latest: version },
      _attachments: { [file]: { content_type: "application/octet-stream", data: tgz.toString("base64"), length: tgz.length } },
    },
  };
}

describe("exporting a repository into another of the same format", () => {
  let s: Suite;
  let admin: string;
  let deployer: string;
  beforeAll(async () => {
    [s] = await Promise.all([startSuite(), buildCli()]);
    admin = s.bootstrapKey;
    deployer = (await s.mint({ label: "ci", grants: [{ scope: "*", tokens: ["deploy"] }] })).key;
  });
  afterAll(async () => {
    await s?.stop();
  });

  const put = async (repo: string, path: string, body: string) => expect((await s.call("PUT", `/repository/${repo}/${path}`, { key: deployer, body })).status).toBe(201);
  const { start, ended, exportAndWait } = exportCalls(() => s, () => admin);

  it("copies a raw repository's files, skips what the target holds already, refuses a path holding other content, and reports each", async () => {
    const source = fresh("raw-src");
    const target = fresh("raw-dst");
    await s.createRepository(source, "raw");
    await s.createRepository(target, "raw");
    await put(source, "a/one.txt", "one");
    await put(source, "a/two.txt", "two");
    await put(source, "b/three.txt", "three");
    await put(target, "a/one.txt", "one");
    await put(target, "b/three.txt", "not three");
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === target && e.kind === "artifact.published");
    try {
      const started = await start(source, target);
      expect(started).toMatchObject({ source, target, format: "raw", state: "running", total: 3 });
      const r = await ended(source, started.id);
      expect(r).toMatchObject({ state: "done", total: 3, copied: 1, skipped: 1, refused: 1, detail: null });
      expect(r.refusals).toEqual([{ path: "b/three.txt", reason: expect.stringMatching(/target holds different content at this path.*not overwritten/) }]);
      expect(await (await s.call("GET", `/repository/${target}/a/two.txt`, { key: deployer })).text()).toBe("two");
      expect(await (await s.call("GET", `/repository/${target}/b/three.txt`, { key: deployer })).text()).toBe("not three");
      // The copy is a publish: its event, with the digest and the admin who exported, as a client upload's.
      const got = await events.until("the copied file's event", (es) => es.some((e) => e.path === "a/two.txt"));
      expect(got.find((e) => e.path === "a/two.txt")).toMatchObject({ digest: `sha256:${createHash("sha256").update("two").digest("hex")}`, size: 3 });

      const again = await exportAndWait(source, target);
      expect(again).toMatchObject({ state: "done", copied: 0, skipped: 2, refused: 1 });
      const list = (await (await s.call("GET", `/api/repositories/${source}/exports`, { key: admin })).json()) as ExportView[];
      expect(list.map((e) => e.id)).toEqual([again.id, started.id]);
    } finally {
      await events.close();
    }
  });

  it("copies an npm repository's package documents (versions, dist-tags, deprecations) with the tarballs, and skips them on a second run", async () => {
    const source = fresh("npm-src");
    const target = fresh("npm-dst");
    await s.createRepository(source, "npm");
    await s.createRepository(target, "npm");
    const v1 = npmDoc("@acme/tool", "1.0.0");
    const v2 = npmDoc("@acme/tool", "2.0.0-beta.1", { tags: { beta: "2.0.0-beta.1" } });
    for (const { doc } of [v1, v2]) expect((await s.call("PUT", `/repository/${source}/@acme%2ftool`, { key: deployer, body: doc })).status).toBe(201);
    const packument = async (repo: string) => (await (await s.call("GET", `/repository/${repo}/@acme%2ftool`, { key: deployer })).json()) as Record<string, any>;
    const edited = await packument(source);
    edited.versions["1.0.0"].deprecated = "use 2";
    expect((await s.call("PUT", `/repository/${source}/@acme%2ftool/-rev/${edited._rev}`, { key: deployer, body: edited })).status).toBe(200);
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === target && e.kind === "artifact.published");
    try {
      const r = await exportAndWait(source, target);
      expect(r).toMatchObject({ state: "done", format: "npm", total: 2, copied: 2, skipped: 0, refused: 0 });
      const from = await packument(source);
      const to = await packument(target);
      expect(to["dist-tags"]).toEqual({ latest: "1.0.0", beta: "2.0.0-beta.1" });
      expect(Object.keys(to.versions)).toEqual(["1.0.0", "2.0.0-beta.1"]);
      expect(to.versions["1.0.0"].deprecated).toBe("use 2");
      expect(to.time["1.0.0"]).toBe(from.time["1.0.0"]);
      expect(to.versions["2.0.0-beta.1"].dist.tarball).toMatch(new RegExp(`/repository/${target}/@acme/tool/-/tool-2\\.0\\.0-beta\\.1\\.tgz$`));
      const tgz = Buffer.from(await (await s.call("GET", `/repository/${target}/@acme/tool/-/tool-2.0.0-beta.1.tgz`, { key: deployer })).arrayBuffer());
      expect(tgz.equals(v2.tgz)).toBe(true);
      // Each version's event carries the npm coordinates a publish's does.
      const got = await events.until("both versions' events", (es) => es.length >= 2);
      expect(got.map((e) => e.package).sort((a, b) => String(a?.version).localeCompare(String(b?.version)))).toEqual([
        { format: "npm", name: "@acme/tool", version: "1.0.0", file: "tool-1.0.0.tgz" },
        { format: "npm", name: "@acme/tool", version: "2.0.0-beta.1", file: "tool-2.0.0-beta.1.tgz" },
      ]);

      expect(await exportAndWait(source, target)).toMatchObject({ state: "done", copied: 0, skipped: 2, refused: 0 });
    } finally {
      await events.close();
    }
  });

  it("refuses an npm version the target unpublished, and one it holds with another tarball", async () => {
    const source = fresh("npm-src");
    const target = fresh("npm-dst");
    await s.createRepository(source, "npm");
    await s.createRepository(target, "npm");
    for (const v of ["1.0.0", "1.1.0"]) expect((await s.call("PUT", `/repository/${source}/lib`, { key: deployer, body: npmDoc("lib", v).doc })).status).toBe(201);
    expect((await s.call("PUT", `/repository/${target}/lib`, { key: deployer, body: npmDoc("lib", "1.0.0").doc })).status).toBe(201);
    expect((await s.call("PUT", `/repository/${target}/lib`, { key: deployer, body: npmDoc("lib", "1.1.0").doc })).status).toBe(201);
    const doc = (await (await s.call("GET", `/repository/${target}/lib`, { key: deployer })).json()) as Record<string, any>;
    delete doc.versions["1.1.0"];
    doc["dist-tags"] = { latest: "1.0.0" };
    expect((await s.call("PUT", `/repository/${target}/lib/-rev/${doc._rev}`, { key: deployer, body: doc })).status).toBe(200);
    const r = await exportAndWait(source, target);
    expect(r).toMatchObject({ state: "done", copied: 0, skipped: 0, refused: 2 });
    expect(r.refusals).toEqual([
      { path: "lib/-/lib-1.0.0.tgz", reason: expect.stringMatching(/has another lib@1\.0\.0/) },
      { path: "lib/-/lib-1.1.0.tgz", reason: expect.stringMatching(/lib@1\.1\.0 was unpublished from/) },
    ]);
  });

  it("refuses another format, the same repository, a missing target, and a key without manage:write", async () => {
    const raw = fresh("raw");
    const npm = fresh("npm");
    await s.createRepository(raw, "raw");
    await s.createRepository(npm, "npm");
    const refusal = async (source: string, target: string, key = admin) => {
      const res = await s.call("POST", `/api/repositories/${source}/export`, { key, body: { target } });
      return { status: res.status, detail: ((await res.json()) as { detail: string }).detail };
    };
    expect(await refusal(raw, npm)).toEqual({ status: 409, detail: `${raw} is a raw repository and ${npm} a npm one: an export copies into a repository of the same format` });
    expect(await refusal(raw, raw)).toEqual({ status: 400, detail: `the target must be another repository than ${raw}` });
    expect(await refusal(raw, "nowhere")).toMatchObject({ status: 400, detail: expect.stringMatching(/no repository named nowhere/) });
    expect(await refusal("nowhere", raw)).toMatchObject({ status: 404 });
    expect((await refusal(raw, fresh("x"), deployer)).status).toBe(403);
    expect((await s.call("GET", `/api/repositories/${raw}/exports/00000000-0000-0000-0000-000000000000`, { key: admin })).status).toBe(404);
  });

  it("svc repositories create, show, list, export --wait and delete, with the key from SVC_KEY", async () => {
    const svc = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
        const env = { PATH: process.env.PATH ?? "", SVC_URL: s.gatewayUrl, SVC_KEY: admin };
        execFile(process.execPath, [CLI, ...args], { env }, (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
      });
    const source = fresh("cli-src");
    const target = fresh("cli-dst");
    expect(await svc(["repositories", "create", source, "raw"])).toMatchObject({ code: 0, stdout: `Repository ${source} (raw) created.\n` });
    expect((await svc(["repositories", "create", target, "raw"])).code).toBe(0);
    await put(source, "x/1.txt", "1");
    await put(source, "x/2.txt", "2");
    await put(target, "x/2.txt", "other");
    const shown = await svc(["repositories", "show", source]);
    expect(shown.stdout).toMatch(/^name\s+/m);
    expect(shown.stdout).toMatch(/^artifacts\s+2$/m);
    expect((await svc(["repositories", "list"])).stdout).toMatch(new RegExp(`^${source}\\s+raw\\s`, "m"));

    const waited = await svc(["repositories", "export", source, target, "--wait"]);
    // Ended with a refusal: exit 3, the refusal and its reason listed.
    expect(waited.code, waited.stderr).toBe(3);
    expect(waited.stdout).toMatch(/^state\s+done$/m);
    expect(waited.stdout).toMatch(/^counts\s+1 copied, 0 skipped, 1 refused of 2$/m);
    expect(waited.stdout).toMatch(/x\/2\.txt\s+the target holds different content at this path/);
    const json = await svc(["repositories", "export", source, target, "--wait", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ state: "done", copied: 0, skipped: 1, refused: 1 });
    const status = await svc(["repositories", "export-status", source, JSON.parse(json.stdout).id, "--json"]);
    expect(JSON.parse(status.stdout)).toMatchObject({ id: JSON.parse(json.stdout).id, state: "done" });

    const refused = await svc(["repositories", "export", source, source]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`the target must be another repository than ${source}`);
    expect((await svc(["repositories", "delete", source])).code).toBe(3);
    expect(await svc(["repositories", "delete", source, "--force"])).toMatchObject({ code: 0, stdout: `Repository ${source} removed.\n` });
  });

  it("says an export was interrupted by a restart, and refuses exports in read-only mode", async () => {
    const source = fresh("raw-big");
    const target = fresh("raw-dst");
    await s.createRepository(source, "raw");
    await s.createRepository(target, "raw");
    const paths = Array.from({ length: 400 }, (_, i) => `f/${String(i).padStart(4, "0")}.txt`);
    for (let i = 0; i < paths.length; i += 16) await Promise.all(paths.slice(i, i + 16).map((p) => put(source, p, p)));
    const started = await start(source, target);
    await s.stopService("artifacts");
    await s.startService("artifacts", { SVC_READ_ONLY: "true" });
    const r = await eventually("the artifacts service back", async () => {
      const res = await s.call("GET", `/api/repositories/${source}/exports/${started.id}`, { key: admin });
      return res.status === 200 ? ((await res.json()) as ExportView) : undefined;
    });
    expect(r).toMatchObject({ state: "interrupted", detail: expect.stringMatching(/interrupted: the artifacts service that ran it stopped/) });
    expect(r.copied).toBeLessThan(400);
    expect(r.ended).not.toBeNull();

    const refused = await s.call("POST", `/api/repositories/${source}/export`, { key: admin, body: { target } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/read-only/);
  }, 180_000);
});
