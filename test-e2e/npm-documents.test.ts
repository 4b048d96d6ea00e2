import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { request, type IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

/**
 * The package documents an npm repository serves are kept serialised between changes: every
 * change (a publish, a dist-tag, a deprecation, an unpublish and a publish again) shows in the
 * very next read of the full and the abbreviated document, read through the gateway as npm does.
 */
describe("npm package documents after each change", () => {
  let s: Suite;
  let key: string;
  const ABBREVIATED = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

  beforeAll(async () => {
    s = await startSuite({ env: { SVC_REPOSITORY: "npm", SVC_REPOSITORY_FORMAT: "npm" } });
    key = s.bootstrapKey;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  const publish = async (name: string, version: string) => {
    const tgz = gzipSync(Buffer.from(`${name}@${version}`));
    const manifest = { name, version, dist: { shasum: createHash("sha1").update(tgz).digest("hex") } };
    const body = { name, "dist-tags": { latest: version }, versions: { [version]: manifest }, _attachments: { [`${name}-${version}.tgz`]: { data: tgz.toString("base64"), length: tgz.length } } };
    const res = await s.call("PUT", `/repository/npm/${name}`, { key, body });
    expect(res.status, await res.text()).toBe(201);
  };
  type Doc = { _rev: string; "dist-tags": Record<string, string>; versions: Record<string, { version: string; deprecated?: string; dist: { tarball: string } }> };
  const read = async (name: string, accept = "application/json") => {
    const res = await s.call("GET", `/repository/npm/${name}`, { key, headers: { accept } });
    return { status: res.status, doc: (res.status === 200 ? await res.json() : undefined) as Doc };
  };
  const both = async (name: string) => [(await read(name)).doc, (await read(name, ABBREVIATED)).doc];

  it("a publish and a dist-tag show in the next read of both documents, and a version by its tag", async () => {
    await publish("cached-doc", "1.0.0");
    for (const d of await both("cached-doc")) expect(Object.keys(d.versions)).toEqual(["1.0.0"]);
    await publish("cached-doc", "1.1.0");
    for (const d of await both("cached-doc")) {
      expect(Object.keys(d.versions)).toEqual(["1.0.0", "1.1.0"]);
      expect(d["dist-tags"]).toEqual({ latest: "1.1.0" });
    }
    const tag = await s.call("PUT", "/repository/npm/-/package/cached-doc/dist-tags/beta", { key, body: JSON.stringify("1.0.0"), headers: { "content-type": "application/json" } });
    expect(tag.status).toBe(201);
    for (const d of await both("cached-doc")) expect(d["dist-tags"]).toEqual({ latest: "1.1.0", beta: "1.0.0" });
    const byTag = await s.call("GET", "/repository/npm/cached-doc/beta", { key });
    expect(await byTag.json()).toMatchObject({ version: "1.0.0", dist: { tarball: expect.stringMatching(/\/repository\/npm\/cached-doc\/-\/cached-doc-1\.0\.0\.tgz$/) } });
  });

  it("a publish cut short after its tarball landed (a crash before its commit) can be sent again: the version lands and is listed", async () => {
    // What a crash between the tarball's blob commit and the index commit leaves: the blob of the
    // very tarball, with no path and no version; the publish sent again finds its blob there.
    const left = gzipSync(Buffer.from("cut-short@1.0.0"));
    const digest = createHash("sha256").update(left).digest("hex");
    const blob = join(s.storeRoot, "blobs", "sha256", digest.slice(0, 2), digest);
    mkdirSync(join(blob, ".."), { recursive: true });
    writeFileSync(blob, left);
    expect((await s.call("GET", "/repository/npm/cut-short/-/cut-short-1.0.0.tgz", { key })).status).toBe(404);
    await publish("cut-short", "1.0.0");
    for (const d of await both("cut-short")) expect(Object.keys(d.versions)).toEqual(["1.0.0"]);
    const tarball = await s.call("GET", "/repository/npm/cut-short/-/cut-short-1.0.0.tgz", { key });
    expect(gunzipSync(Buffer.from(await tarball.arrayBuffer())).toString()).toBe("cut-short@1.0.0");
    // Once published, the version is immutable as ever.
    const tgz = gzipSync(Buffer.from("something else"));
    const again = { name: "cut-short", versions: { "1.0.0": { name: "cut-short", version: "1.0.0" } }, _attachments: { "cut-short-1.0.0.tgz": { data: tgz.toString("base64"), length: tgz.length } } };
    expect((await s.call("PUT", "/repository/npm/cut-short", { key, body: again })).status).toBe(409);
  });

  it("a deprecation shows in the next read; an unpublished package is gone, and published again shows only its new version", async () => {
    await publish("cached-gone", "1.0.0");
    const full = (await read("cached-gone")).doc;
    await read("cached-gone", ABBREVIATED);
    full.versions["1.0.0"]!.deprecated = "use something else";
    const edit = await s.call("PUT", `/repository/npm/cached-gone/-rev/${full._rev}`, { key, body: full });
    expect(edit.status).toBe(200);
    for (const d of await both("cached-gone")) expect(d.versions["1.0.0"]!.deprecated).toBe("use something else");

    const gone = await s.call("DELETE", `/repository/npm/cached-gone/-rev/${full._rev}`, { key });
    expect(gone.status).toBe(200);
    expect((await read("cached-gone")).status).toBe(404);
    expect((await read("cached-gone", ABBREVIATED)).status).toBe(404);
    await publish("cached-gone", "2.0.0");
    for (const d of await both("cached-gone")) {
      expect(Object.keys(d.versions)).toEqual(["2.0.0"]);
      expect(d["dist-tags"]).toEqual({ latest: "2.0.0" });
    }
  });

  it("each address the document is asked through gets its own tarball URLs", async () => {
    await publish("cached-hosts", "1.0.0");
    const at = async (host: string) => {
      const r = await s.rawCall("GET", "/repository/npm/cached-hosts", { host, "service-repository-key": key });
      expect(r.status).toBe(200);
      return (JSON.parse(r.body) as Doc).versions["1.0.0"]!.dist.tarball;
    };
    expect(await at("one.example:8080")).toBe("http://one.example:8080/repository/npm/cached-hosts/-/cached-hosts-1.0.0.tgz");
    expect(await at("two.example:8080")).toBe("http://two.example:8080/repository/npm/cached-hosts/-/cached-hosts-1.0.0.tgz");
  });

  it("a client's copy is revalidated by its ETag: 304 while the package is unchanged, the new document once it changes", async () => {
    await publish("cached-tags", "1.0.0");
    const get = (accept: string, headers: Record<string, string> = {}, method = "GET") => s.call(method, "/repository/npm/cached-tags", { key, headers: { accept, ...headers } });
    const first = await get("application/json");
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^W\/".+"$/);
    expect(first.headers.get("vary")).toMatch(/accept/i);
    // No Last-Modified: a cache would guess a freshness lifetime from it and stop asking.
    expect(first.headers.get("last-modified")).toBeNull();
    const abbreviatedTag = (await get(ABBREVIATED)).headers.get("etag");
    expect(abbreviatedTag).not.toBe(etag);

    for (const [method, ifNoneMatch] of [["GET", etag], ["GET", `"other", ${etag.slice(2)}`], ["HEAD", etag]] as const) {
      const again = await get("application/json", { "if-none-match": ifNoneMatch }, method);
      expect(again.status).toBe(304);
      expect(again.headers.get("etag")).toBe(etag);
      expect(await again.text()).toBe("");
    }
    // The abbreviated document is not the full one: the full one's tag does not confirm it.
    expect((await get(ABBREVIATED, { "if-none-match": etag })).status).toBe(200);

    await publish("cached-tags", "1.1.0");
    const changed = await get("application/json", { "if-none-match": etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(Object.keys(((await changed.json()) as Doc).versions)).toEqual(["1.0.0", "1.1.0"]);
  });

  /** A request as a client sends it, the answer's bytes as they came (fetch would inflate them). */
  const wire = (method: string, path: string, headers: Record<string, string>) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const u = new URL(s.gatewayUrl);
      const req = request({ host: u.hostname, port: u.port, method, path, headers: { "service-repository-key": key, ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on("error", reject);
      req.end();
    });

  it("a large document goes gzipped to a client that takes gzip, the same document as sent plain; a small one and a plain client get JSON", async () => {
    for (let i = 0; i < 80; i++) await publish("many-versions", `1.${i}.0`);
    for (const accept of ["application/json", ABBREVIATED]) {
      const plain = await wire("GET", "/repository/npm/many-versions", { accept, "accept-encoding": "identity" });
      expect(plain.status).toBe(200);
      expect(plain.headers["content-encoding"]).toBeUndefined();
      const doc = JSON.parse(plain.body.toString("utf8")) as Doc;
      expect(Object.keys(doc.versions)).toHaveLength(80);

      // As npm asks: gzip, deflate.
      const zipped = await wire("GET", "/repository/npm/many-versions", { accept, "accept-encoding": "gzip, deflate" });
      expect(zipped.status).toBe(200);
      expect(zipped.headers["content-encoding"]).toBe("gzip");
      expect(zipped.headers.vary).toMatch(/accept-encoding/i);
      expect(zipped.headers.etag).toBe(plain.headers.etag);
      expect(zipped.body.length).toBeLessThan(plain.body.length / 4);
      expect(Number(zipped.headers["content-length"])).toBe(zipped.body.length);
      expect(JSON.parse(gunzipSync(zipped.body).toString("utf8"))).toEqual(doc);

      const head = await wire("HEAD", "/repository/npm/many-versions", { accept, "accept-encoding": "gzip" });
      expect(head.headers["content-encoding"]).toBe("gzip");
      expect(Number(head.headers["content-length"])).toBe(zipped.body.length);
      expect(head.body.length).toBe(0);
      // The client's cached copy is confirmed whichever encoding it came in.
      expect((await wire("GET", "/repository/npm/many-versions", { accept, "accept-encoding": "gzip", "if-none-match": zipped.headers.etag! })).status).toBe(304);
    }
    // A client that does not take gzip, or takes it not at all (q=0), gets the JSON as it is.
    for (const encoding of [undefined, "br", "gzip;q=0, identity"]) {
      const r = await wire("GET", "/repository/npm/many-versions", encoding ? { "accept-encoding": encoding } : {});
      expect(r.headers["content-encoding"]).toBeUndefined();
      expect(Object.keys((JSON.parse(r.body.toString("utf8")) as Doc).versions)).toHaveLength(80);
    }
    // A small document is not worth compressing.
    await publish("few-versions", "1.0.0");
    const small = await wire("GET", "/repository/npm/few-versions", { "accept-encoding": "gzip, deflate" });
    expect(small.status).toBe(200);
    expect(small.headers["content-encoding"]).toBeUndefined();
    expect((JSON.parse(small.body.toString("utf8")) as Doc)["dist-tags"]).toEqual({ latest: "1.0.0" });
  });
});
