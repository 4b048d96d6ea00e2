import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk, run, scratchEnv, startNpmSuite, type Clients } from "./npm-clients.js";
import { buildDist, ensurePythonClients, pythonRuns } from "./pypi-clients.js";
import { freshName as fresh, type Suite } from "./suite.js";

/**
 * Per-repository storage quotas (docs/administration/repositories.md, "Quotas"): set at creation
 * or with PATCH, enforced for every format as a write commits, shown in the API and the meters,
 * kept across a restart. npm with the real client; raw with plain HTTP as curl sends it.
 */
describe("repository storage quotas", () => {
  let s: Suite;
  let clients: Clients;
  let work: string;
  let registry: string;
  let admin: string;
  let deployer: string;
  let n = 0;

  beforeAll(async () => {
    ({ suite: s, clients, work, registry } = await startNpmSuite("quotas-"));
    admin = s.bootstrapKey;
    // One key for the raw repositories of these tests and the npm repository.
    deployer = (await s.mint({ label: "ci", grants: [{ scope: "*", tokens: ["deploy"] }] })).key;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  const show = async (name: string) => {
    const r = await s.call("GET", `/api/repositories/${name}`, { key: admin });
    expect(r.status).toBe(200);
    return (await r.json()) as { usedBytes: number; quotaBytes: number | null; bytes: number };
  };
  const patch = (name: string, body: object) => s.call("PATCH", `/api/repositories/${name}`, { key: admin, body });
  const put = (repo: string, path: string, body: string | Uint8Array | ReadableStream) => s.call("PUT", `/repository/${repo}/${path}`, { key: deployer, body });
  const rawWithQuota = async (quotaBytes: number) => {
    const name = fresh("capped");
    const r = await s.call("POST", "/api/repositories", { key: admin, body: { name, format: "raw", quotaBytes } });
    expect(r.status).toBe(201);
    expect(await r.json()).toMatchObject({ name, quotaBytes, usedBytes: 0 });
    return name;
  };
  /** A body sent without Content-Length (chunked): only the commit can refuse it. */
  const chunked = (bytes: Uint8Array) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(bytes);
        c.close();
      },
    });

  it("takes quotaBytes at creation and in a PATCH (null removes it), refusing anything but a positive whole number, and lists it with usedBytes", async () => {
    const name = await rawWithQuota(1000);
    for (const bad of [0, -5, 1.5, "1000", true]) {
      const r = await patch(name, { quotaBytes: bad });
      expect(r.status, String(bad)).toBe(400);
      expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      const created = await s.call("POST", "/api/repositories", { key: admin, body: { name: fresh("bad"), format: "raw", quotaBytes: bad } });
      expect(created.status, String(bad)).toBe(400);
    }
    expect((await patch(name, { retention: {} })).status).toBe(400);
    expect((await patch(name, {})).status).toBe(400);
    expect((await patch(fresh("none"), { quotaBytes: 5 })).status).toBe(404);
    // Administration only.
    expect((await s.call("PATCH", `/api/repositories/${name}`, { key: deployer, body: { quotaBytes: 5 } })).status).toBe(403);

    expect((await patch(name, { quotaBytes: 2048 })).status).toBe(200);
    expect(await show(name)).toMatchObject({ quotaBytes: 2048, usedBytes: 0 });
    const list = (await (await s.call("GET", "/api/repositories?limit=500", { key: admin })).json()) as { name: string; quotaBytes: number | null; usedBytes: number }[];
    expect(list.find((r) => r.name === name)).toMatchObject({ quotaBytes: 2048, usedBytes: 0 });
    expect(list.find((r) => r.name === "npm")).toMatchObject({ quotaBytes: null });
    const removed = await patch(name, { quotaBytes: null });
    expect(await removed.json()).toMatchObject({ quotaBytes: null });
  });

  it("refuses a raw PUT over the quota with 413 and a sentence, storing nothing; a redeploy counts the difference; a delete frees its bytes; raising the quota lets it through", async () => {
    const name = await rawWithQuota(1000);
    expect((await put(name, "a.bin", new Uint8Array(600))).status).toBe(201);
    expect(await show(name)).toMatchObject({ usedBytes: 600, bytes: 600 });

    // Declared too large (Content-Length): refused before the body is read.
    const over = await put(name, "b.bin", new Uint8Array(500));
    expect(over.status).toBe(413);
    expect(await over.text()).toBe(`repository ${name} is over its storage quota: 500 bytes more would make 1.1 KiB (1100 bytes) of its 1000 bytes; nothing was stored (an administrator can raise it: PATCH /api/repositories/${name} {"quotaBytes": N})\n`);
    // Sent chunked: refused as it commits, the same way.
    const overChunked = await put(name, "b.bin", chunked(new Uint8Array(500).fill(1)));
    expect(overChunked.status).toBe(413);
    expect(await overChunked.text()).toContain("over its storage quota: 500 bytes more would make 1.1 KiB (1100 bytes) of its 1000 bytes; nothing was stored");
    expect((await s.call("GET", `/repository/${name}/b.bin`, { key: deployer })).status).toBe(404);
    expect(await show(name)).toMatchObject({ usedBytes: 600, bytes: 600 });

    // A redeploy of a.bin counts what it adds: 600 -> 1000 fits, 1001 does not.
    expect((await put(name, "a.bin", new Uint8Array(1000).fill(2))).status).toBe(200);
    expect((await put(name, "a.bin", chunked(new Uint8Array(1001).fill(3)))).status).toBe(413);
    expect((await (await s.call("GET", `/repository/${name}/a.bin`, { key: deployer })).arrayBuffer()).byteLength).toBe(1000);
    expect(await show(name)).toMatchObject({ usedBytes: 1000 });

    expect((await s.call("DELETE", `/repository/${name}/a.bin`, { key: deployer })).status).toBe(204);
    expect(await show(name)).toMatchObject({ usedBytes: 0 });
    expect((await put(name, "b.bin", new Uint8Array(900).fill(4))).status).toBe(201);
    expect((await put(name, "c.bin", new Uint8Array(200).fill(5))).status).toBe(413);
    expect((await patch(name, { quotaBytes: 1100 })).status).toBe(200);
    expect((await put(name, "c.bin", new Uint8Array(200).fill(5))).status).toBe(201);
    // Lowered below what it holds: allowed, nothing goes, and what adds to it is refused (a removal still frees).
    expect(await (await patch(name, { quotaBytes: 500 })).json()).toMatchObject({ quotaBytes: 500, usedBytes: 1100 });
    expect((await put(name, "d.bin", "x")).status).toBe(413);
    expect((await s.call("DELETE", `/repository/${name}/c.bin`, { key: deployer })).status).toBe(204);
    expect(await show(name)).toMatchObject({ usedBytes: 900, quotaBytes: 500 });
  });

  it("lets exactly as many concurrent publishes land as fit, however they race", async () => {
    const name = await rawWithQuota(1000);
    // Ten of 300 bytes at once, half sent chunked (no early check): three fit.
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => put(name, `race/${i}.bin`, i % 2 ? chunked(new Uint8Array(300).fill(i)) : new Uint8Array(300).fill(i))));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([201, 201, 201, 413, 413, 413, 413, 413, 413, 413]);
    expect(await show(name)).toMatchObject({ usedBytes: 900, bytes: 900 });
  });

  it("refuses an npm publish over the quota, and npm prints why", async () => {
    expect((await patch("npm", { quotaBytes: 200 })).status).toBe(200);
    const dir = join(work, `pkg-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "too-big-e2e", version: "1.0.0", main: "index.js", license: "MIT" }));
    // Random text: its tarball does not compress below the quota.
    writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 251)).toString("base64"))};\n`);
    const home = join(work, `run-${++n}`);
    const host = registry.replace(/^https?:/, "");
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, "npmrc"), `registry=${registry}\n${host}:_authToken=${deployer}\n`);
    const env = scratchEnv(home);
    const refused = await run(clients.npm, ["publish"], { cwd: dir, env });
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/413[\s\S]*repository npm is over its storage quota: .* more would make .* of its 200 bytes; nothing was stored/);
    expect((await s.call("GET", "/repository/npm/too-big-e2e", { key: deployer })).status).toBe(404);

    expect((await patch("npm", { quotaBytes: 10_000_000 })).status).toBe(200);
    expectOk(await run(clients.npm, ["publish"], { cwd: dir, env }));
    expect((await show("npm")).usedBytes).toBeGreaterThan(200);
    expect((await patch("npm", { quotaBytes: null })).status).toBe(200);
  });

  it("refuses a twine upload over the quota, and twine prints the reason", async () => {
    const py = await ensurePythonClients();
    const runs = pythonRuns(work, py);
    const name = fresh("pypi");
    expect((await s.call("POST", "/api/repositories", { key: admin, body: { name, format: "pypi", quotaBytes: 100 } })).status).toBe(201);
    const dist = await buildDist(work, py, { name: "quota_pkg", version: "1.0.0" });
    const refused = await runs.twine(`${s.gatewayUrl}/repository/${name}/`, [dist.wheel], deployer);
    expect(refused.code).not.toBe(0);
    // twine (rich) wraps its lines and colours words: read as one line of text.
    const said = refused.output.replace(/\u001b\[[0-9;]*m/g, "").replace(/\s+/g, " ");
    expect(said).toMatch(new RegExp(`HTTPError: 413 .* repository ${name} is over its storage quota: .* more would make .* of its 100 bytes; nothing was stored`));
    expect(await show(name)).toMatchObject({ usedBytes: 0 });
    expect((await patch(name, { quotaBytes: 10_000_000 })).status).toBe(200);
    runs.expectOk(await runs.twine(`${s.gatewayUrl}/repository/${name}/`, [dist.wheel], deployer));
  });

  it("shows each repository's usage and quota in the meters, and keeps usage and quota across a restart of artifacts", async () => {
    const name = await rawWithQuota(1000);
    expect((await put(name, "kept.bin", new Uint8Array(700).fill(9))).status).toBe(201);
    const meters = async () => (await (await s.call("GET", "/metrics", { key: admin })).text()).split("\n");
    const line = (lines: string[], meter: string) => lines.find((l) => l.startsWith(`${meter}{`) && l.includes(`repository="${name}"`));
    const before = await meters();
    expect(line(before, "svc_repository_used_bytes")).toMatch(/ 700$/);
    expect(line(before, "svc_repository_quota_bytes")).toMatch(/ 1000$/);

    await s.stopService("artifacts");
    await s.startService("artifacts");
    expect(await show(name)).toMatchObject({ usedBytes: 700, quotaBytes: 1000 });
    expect((await put(name, "more.bin", chunked(new Uint8Array(301).fill(1)))).status).toBe(413);
    expect((await put(name, "more.bin", new Uint8Array(300).fill(1))).status).toBe(201);
    expect(line(await meters(), "svc_repository_used_bytes")).toMatch(/ 1000$/);
  });
});
