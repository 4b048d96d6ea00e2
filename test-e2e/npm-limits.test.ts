import { createHash, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

/**
 * What an npm publish may cost the server: its tarball streams out of the document to the store
 * (memory stays flat whatever its size), the rest of the document and each of its fields are
 * capped (413 in npm's error format), the manifests kept are what clients read, and no name a
 * client gives (a version, a dist-tag) is looked up on an object's prototype.
 */
describe("npm: bounded publishes and what is kept of them", () => {
  let s: Suite;
  let key: string;
  const NPM = { "user-agent": "npm/11.0.0 node/v20.20.0 linux x64 workspaces/false", "content-type": "application/json" };

  beforeAll(async () => {
    s = await startSuite({ env: { SVC_REPOSITORY: "npm", SVC_REPOSITORY_FORMAT: "npm", SVC_REPOSITORY_SCOPE_FROM_PATH: "true" } });
    key = (await s.mint({ label: "publisher", grants: [{ scope: "npm", tokens: ["deploy"] }] })).key;
  }, 300_000);
  afterAll(async () => {
    await s?.stop();
  });

  const sha = (algo: string, data: Buffer, enc: "hex" | "base64") => createHash(algo).update(data).digest(enc);
  /** A publish document as npm sends it: the version's manifest, then the tarball. */
  const document = (name: string, version: string, tgz: Buffer, manifest: object = {}, extra: object = {}) => ({
    _id: name,
    name,
    "dist-tags": { latest: version },
    versions: { [version]: { name, version, ...manifest, dist: { shasum: sha("sha1", tgz, "hex"), integrity: `sha512-${sha("sha512", tgz, "base64")}` } } },
    access: null,
    ...extra,
    _attachments: { [`${name}-${version}.tgz`]: { content_type: "application/octet-stream", data: tgz.toString("base64"), length: tgz.length } },
  });
  const put = (name: string, body: object | string) => s.call("PUT", `/repository/npm/${name}`, { key, body: typeof body === "string" ? body : JSON.stringify(body), headers: NPM });
  const publish = async (name: string, version: string, manifest: object = {}, extra: object = {}) => {
    const res = await put(name, document(name, version, gzipSync(`${name}@${version}`), manifest, extra));
    expect(res.status, await res.text()).toBe(201);
  };

  /** The memory high-water mark of a process (KiB), and its reset to the present size (Linux: clear_refs 5). */
  const peakKiB = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, "5");

  it("a 128 MiB tarball streams through the gateway to the store: neither's memory grows by 100 MiB, and it downloads whole with its digests", async () => {
    const size = 128 * 1024 * 1024;
    // Warmed up first (code loaded and compiled), so what is measured is the publish itself.
    await publish("warm-e2e", "1.0.0");
    const pids = { artifacts: s.pid("artifacts")!, gateway: s.pid("gateway")! };
    for (const pid of Object.values(pids)) resetPeak(pid);
    const before = { artifacts: peakKiB(pids.artifacts), gateway: peakKiB(pids.gateway) };

    // The document as yarn 4 sends it (the tarball before the version's manifest), made as it is
    // sent: the test holds one chunk of it at a time, and the digests are known only at the end.
    const sha1 = createHash("sha1");
    const sha512 = createHash("sha512");
    const CHUNK = 3 * 256 * 1024;
    let sent = 0;
    const parts = (function* () {
      yield Buffer.from('{"_id":"big-e2e","_attachments":{"big-e2e-1.0.0.tgz":{"content_type":"application/octet-stream","length":' + size + ',"data":"');
      while (sent < size) {
        const chunk = randomBytes(Math.min(CHUNK, size - sent));
        sent += chunk.length;
        sha1.update(chunk);
        sha512.update(chunk);
        yield Buffer.from(chunk.toString("base64"));
      }
      const dist = { shasum: sha1.digest("hex"), integrity: `sha512-${sha512.digest("base64")}` };
      yield Buffer.from(`"}},"name":"big-e2e","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":${JSON.stringify({ name: "big-e2e", version: "1.0.0", dist })}},"readme":"# big"}`);
    })();
    const res = await s.call("PUT", "/repository/npm/big-e2e", { key, body: Readable.toWeb(Readable.from(parts, { objectMode: false })) as ReadableStream, headers: NPM });
    expect(res.status, await res.text()).toBe(201);

    const grown = { artifacts: (peakKiB(pids.artifacts) - before.artifacts) / 1024, gateway: (peakKiB(pids.gateway) - before.gateway) / 1024 };
    expect(grown.artifacts, "the artifacts service's memory peak grew by (MiB)").toBeLessThan(100);
    expect(grown.gateway, "the gateway's memory peak grew by (MiB)").toBeLessThan(100);

    const doc = (await (await s.call("GET", "/repository/npm/big-e2e", { key })).json()) as { versions: Record<string, { dist: { tarball: string; integrity: string; shasum: string } }> };
    const dist = doc.versions["1.0.0"]!.dist;
    const tarball = await s.call("GET", new URL(dist.tarball).pathname, { key });
    expect(tarball.status).toBe(200);
    const down = createHash("sha512");
    let received = 0;
    await tarball.body!.pipeTo(new WritableStream({ write: (part: Uint8Array) => void ((received += part.length), down.update(part)) }));
    expect(received).toBe(size);
    expect(`sha512-${down.digest("base64")}`).toBe(dist.integrity);
  }, 300_000);

  it("a tarball that does not match its declared integrity is refused, and nothing is stored", async () => {
    const tgz = randomBytes(2 * 1024 * 1024);
    const body = document("mismatch-e2e", "1.0.0", tgz);
    body._attachments["mismatch-e2e-1.0.0.tgz"]!.data = randomBytes(tgz.length).toString("base64");
    const res = await put("mismatch-e2e", body);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/^dist\.(shasum|integrity) does not match the tarball sent: nothing was published/) });
    expect((await s.call("GET", "/repository/npm/mismatch-e2e", { key })).status).toBe(404);
    expect((await s.call("GET", "/repository/npm/mismatch-e2e/-/mismatch-e2e-1.0.0.tgz", { key })).status).toBe(404);
    body._attachments["mismatch-e2e-1.0.0.tgz"]!.data = "";
    const empty = await put("mismatch-e2e", body);
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({ error: "the tarball in _attachments has no base64 data" });
  });

  it("a readme over the 1 MiB field limit is refused with 413 in npm's error format, and nothing is stored", async () => {
    const res = await put("readme-e2e", document("readme-e2e", "1.0.0", gzipSync("r"), { readme: "r".repeat(1536 * 1024) }));
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 'versions["1.0.0"].readme is over the 1 MiB limit of one field of an npm document: nothing was stored' });
    expect((await s.call("GET", "/repository/npm/readme-e2e", { key })).status).toBe(404);
  });

  it("a document over 32 MiB without its tarball is refused with 413, and nothing is stored", async () => {
    const res = await put("heavy-e2e", document("heavy-e2e", "1.0.0", gzipSync("h"), {}, { padding: "p".repeat(33 * 1024 * 1024) }));
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: "the npm document is over the 32 MiB limit (its tarball not counted): nothing was stored" });
    expect((await s.call("GET", "/repository/npm/heavy-e2e", { key })).status).toBe(404);
  });

  it("keeps of each version what clients read: no readme nor unknown field in the versions, one readme of at most 64 Ki characters for the package", async () => {
    const readme = (v: string) => `# readme of ${v}\n${"x".repeat(900 * 1024)}`;
    for (const v of ["1.0.0", "1.1.0", "1.2.0", "1.3.0"]) {
      await publish("lean-e2e", v, { readme: readme(v), bulk: "b".repeat(900 * 1024), description: "lean", scripts: { test: "true" }, dependencies: { a: "^1.0.0" } });
    }
    const res = await s.call("GET", "/repository/npm/lean-e2e", { key, headers: { "accept-encoding": "identity" } });
    const text = await res.text();
    expect(text.length).toBeLessThan(100 * 1024);
    const doc = JSON.parse(text) as { readme: string; versions: Record<string, Record<string, unknown>> };
    expect(doc.readme).toBe(readme("1.3.0").slice(0, 65536));
    for (const v of Object.values(doc.versions)) {
      expect(v).not.toHaveProperty("readme");
      expect(v).not.toHaveProperty("bulk");
      expect(v).toMatchObject({ name: "lean-e2e", description: "lean", scripts: { test: "true" }, dependencies: { a: "^1.0.0" } });
    }
    const one = (await (await s.call("GET", "/repository/npm/lean-e2e/1.1.0", { key })).json()) as Record<string, unknown>;
    expect(one).toMatchObject({ version: "1.1.0", description: "lean" });
    expect(one).not.toHaveProperty("readme");
    expect(one).not.toHaveProperty("bulk");
  });

  const PROTOTYPE_NAMES = ["hasOwnProperty", "valueOf", "constructor", "toString", "__proto__", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "__defineGetter__", "__lookupSetter__"];

  it("a version or dist-tag named like a property of every object is not found (404), and no such dist-tag can be set", async () => {
    await publish("proto-e2e", "1.0.0");
    for (const name of PROTOTYPE_NAMES) {
      const get = await s.call("GET", `/repository/npm/proto-e2e/${name}`, { key, headers: NPM });
      expect(get.status, name).toBe(404);
      expect(await get.json()).toEqual({ error: `proto-e2e has no version or dist-tag ${name}` });
      const tag = await s.call("PUT", `/repository/npm/-/package/proto-e2e/dist-tags/${name}`, { key, body: JSON.stringify("1.0.0"), headers: NPM });
      expect(tag.status, name).toBe(400);
      expect(((await tag.json()) as { error: string }).error).toMatch(new RegExp(`^${name} is not a valid dist-tag`));
      const rm = await s.call("DELETE", `/repository/npm/-/package/proto-e2e/dist-tags/${name}`, { key, headers: NPM });
      expect(rm.status, name).toBe(404);
    }
    // Sent in a publish, such dist-tags are left out as every tag not naming the version is.
    const tags = PROTOTYPE_NAMES.map((t) => `${JSON.stringify(t)}:"1.1.0"`).join(",");
    const body = JSON.stringify(document("proto-e2e", "1.1.0", gzipSync("p"))).replace('"dist-tags":{', `"dist-tags":{${tags},`);
    expect((await put("proto-e2e", body)).status).toBe(201);
    const listed = await s.call("GET", "/repository/npm/-/package/proto-e2e/dist-tags", { key });
    expect(await listed.text()).toBe('{"latest":"1.1.0"}');
    expect((await s.call("GET", "/repository/npm/proto-e2e/latest", { key })).status).toBe(200);
  });

  it("a version named like a property of every object is refused in a publish, and an edit naming one changes nothing", async () => {
    for (const name of ["__proto__", "constructor"]) {
      const body = JSON.stringify(document("proto-v-e2e", "1.0.0", gzipSync("v"))).replace('"versions":{"1.0.0":', `"versions":{${JSON.stringify(name)}:`);
      const res = await put("proto-v-e2e", body);
      expect(res.status, name).toBe(400);
      expect(await res.json()).toEqual({ error: `${name} is not a valid semver version` });
    }
    await publish("proto-v-e2e", "1.0.0");
    const doc = (await (await s.call("GET", "/repository/npm/proto-v-e2e", { key })).json()) as { versions: Record<string, unknown> };
    const edited = JSON.stringify(doc).replace('"versions":{', '"versions":{"__proto__":{"deprecated":"x"},"constructor":{"deprecated":"y"},');
    expect((await s.call("PUT", "/repository/npm/proto-v-e2e/-rev/1", { key, body: edited, headers: NPM })).status).toBe(200);
    const after = (await (await s.call("GET", "/repository/npm/proto-v-e2e", { key })).json()) as { versions: Record<string, { deprecated?: string }> };
    expect(Object.keys(after.versions)).toEqual(["1.0.0"]);
    expect(after.versions["1.0.0"]!.deprecated).toBeUndefined();
  });
});
