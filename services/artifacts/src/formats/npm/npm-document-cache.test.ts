import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import type { NpmPackageRow, NpmVersionRow } from "./npm-store.js";
import { COMPRESS_FROM_BYTES, npmDocumentCacheFactory, visibleTags, type NpmDocument } from "./npm-document-cache.js";

/** One Postgres shared by every replica: package rows with their revision, and version rows. */
function sharedStore() {
  const created = new Date("2026-01-01T00:00:00Z");
  const db = { pkg: undefined as NpmPackageRow | undefined, versions: [] as NpmVersionRow[], versionReads: 0 };
  const publish = (version: string) => {
    const rev = (db.pkg?.rev ?? 0) + 1;
    db.pkg = { distTags: { latest: version }, rev, created: db.pkg?.created ?? created, modified: new Date(created.getTime() + rev) };
    db.versions.push({ version, manifest: { name: "p", version, dist: { shasum: version } }, tarball: `p/-/p-${version}.tgz`, published: created });
  };
  const store = {
    findPackage: async () => db.pkg,
    documentVersions: async () => {
      db.versionReads++;
      return { versions: [...db.versions], readme: undefined };
    },
  };
  return { db, publish, store };
}

const parse = (d: NpmDocument | undefined) => JSON.parse(d!.body!.toString("utf8")) as { versions: Record<string, { dist: { tarball: string } }>; "dist-tags": Record<string, string> };

describe("npm document cache", () => {
  it("serves the document built once until the package's revision changes, on every replica", async () => {
    const { db, publish, store } = sharedStore();
    const a = npmDocumentCacheFactory({ store });
    const b = npmDocumentCacheFactory({ store });
    publish("1.0.0");
    expect(Object.keys(parse(await a.get("full", "npm", "p", "http://h/repository/npm")).versions)).toEqual(["1.0.0"]);
    await a.get("full", "npm", "p", "http://h/repository/npm");
    expect(db.versionReads).toBe(1);

    // Published through the other replica: the first replica's next read has it.
    publish("1.1.0");
    expect(Object.keys(parse(await b.get("abbreviated", "npm", "p", "http://h/repository/npm")).versions)).toEqual(["1.0.0", "1.1.0"]);
    const full = parse(await a.get("full", "npm", "p", "http://h/repository/npm"));
    expect(Object.keys(full.versions)).toEqual(["1.0.0", "1.1.0"]);
    expect(full["dist-tags"]).toEqual({ latest: "1.1.0" });
  });

  it("gives each address its own tarball URLs, and answers undefined for a package that is gone", async () => {
    const { db, publish, store } = sharedStore();
    const c = npmDocumentCacheFactory({ store });
    publish("1.0.0");
    expect(parse(await c.get("full", "npm", "p", "http://one/repository/npm")).versions["1.0.0"]!.dist.tarball).toBe("http://one/repository/npm/p/-/p-1.0.0.tgz");
    expect(parse(await c.get("full", "npm", "p", "https://two/repository/npm")).versions["1.0.0"]!.dist.tarball).toBe("https://two/repository/npm/p/-/p-1.0.0.tgz");
    db.pkg = undefined;
    expect(await c.get("full", "npm", "p", "http://one/repository/npm")).toBeUndefined();
  });

  it("a package removed and published again at the same revision is not served from before", async () => {
    const { db, publish, store } = sharedStore();
    const c = npmDocumentCacheFactory({ store });
    publish("1.0.0");
    await c.get("full", "npm", "p", "http://h/r");
    db.pkg = { ...db.pkg!, created: new Date("2026-02-01T00:00:00Z"), distTags: { latest: "2.0.0" } };
    db.versions = [{ version: "2.0.0", manifest: { name: "p", version: "2.0.0" }, tarball: "p/-/p-2.0.0.tgz", published: new Date() }];
    expect(Object.keys(parse(await c.get("full", "npm", "p", "http://h/r")).versions)).toEqual(["2.0.0"]);
  });

  it("concurrent reads that miss share one build, and the kept bytes stay under the bound", async () => {
    const { db, publish, store } = sharedStore();
    publish("1.0.0");
    const c = npmDocumentCacheFactory({ store, maxBytes: 600 });
    const bodies = await Promise.all(Array.from({ length: 20 }, () => c.get("full", "npm", "p", "http://h/r")));
    expect(db.versionReads).toBe(1);
    expect(new Set(bodies.map((d) => d!.body)).size).toBe(1);
    for (let i = 0; i < 10; i++) await c.get("full", "npm", "p", `http://host-${i}/r`);
    expect(c.stats().bytes).toBeLessThanOrEqual(600);
    expect(c.stats().documents).toBeGreaterThan(0);
  });

  it("tags each document by revision, kind and address, and answers a current tag without building the document", async () => {
    const { db, publish, store } = sharedStore();
    const a = npmDocumentCacheFactory({ store });
    publish("1.0.0");
    const full = await a.get("full", "npm", "p", "http://h/r");
    expect(full!.etag).toMatch(/^W\/"[\w-]+"$/);
    expect((await a.get("full", "npm", "p", "http://h/r"))!.etag).toBe(full!.etag);
    expect((await a.get("abbreviated", "npm", "p", "http://h/r"))!.etag).not.toBe(full!.etag);
    expect((await a.get("full", "npm", "p", "http://other/r"))!.etag).not.toBe(full!.etag);

    // Another replica that never built it: the tag is answered from the package row alone.
    const b = npmDocumentCacheFactory({ store });
    const reads = db.versionReads;
    const opaque = full!.etag.slice(2);
    for (const tags of [[opaque], ['"other"', opaque], "*" as const]) {
      expect(await b.get("full", "npm", "p", "http://h/r", tags)).toEqual({ etag: full!.etag, body: undefined });
    }
    expect(db.versionReads).toBe(reads);
    expect((await b.get("full", "npm", "p", "http://h/r", ['"other"']))!.body).toBeDefined();

    // A change makes the old tag stale: the new document comes whole, under a new tag.
    publish("1.1.0");
    const after = await b.get("full", "npm", "p", "http://h/r", [opaque]);
    expect(after!.etag).not.toBe(full!.etag);
    expect(Object.keys(parse(after).versions)).toEqual(["1.0.0", "1.1.0"]);
  });

  it("a large document goes gzipped to a client that accepts it, compressed once per revision; a small one plain", async () => {
    const { db, publish, store } = sharedStore();
    const c = npmDocumentCacheFactory({ store });
    publish("1.0.0");
    const small = await c.get("full", "npm", "p", "http://h/r", undefined, true);
    expect(small!.encoding).toBeUndefined();
    expect(small!.body!.length).toBeLessThan(COMPRESS_FROM_BYTES);
    expect(Object.keys(parse(small).versions)).toEqual(["1.0.0"]);

    for (let i = 1; i <= 200; i++) publish(`1.${i}.0`);
    const plain = await c.get("full", "npm", "p", "http://h/r");
    expect(plain!.encoding).toBeUndefined();
    expect(plain!.body!.length).toBeGreaterThanOrEqual(COMPRESS_FROM_BYTES);
    const zipped = await Promise.all(Array.from({ length: 10 }, () => c.get("full", "npm", "p", "http://h/r", undefined, true)));
    for (const z of zipped) {
      expect(z!.encoding).toBe("gzip");
      expect(z!.etag).toBe(plain!.etag);
      expect(gunzipSync(z!.body!).equals(plain!.body!)).toBe(true);
    }
    // One compression for the reads made together, kept for the next ones.
    expect(new Set(zipped.map((z) => z!.body)).size).toBe(1);
    expect((await c.get("full", "npm", "p", "http://h/r", undefined, true))!.body).toBe(zipped[0]!.body);
    expect(c.stats().bytes).toBe(plain!.body!.length + zipped[0]!.body!.length);

    // A change: the next read, plain or gzipped, is the new document.
    publish("2.0.0");
    const after = await c.get("full", "npm", "p", "http://h/r", undefined, true);
    expect(after!.encoding).toBe("gzip");
    expect(Object.keys(JSON.parse(gunzipSync(after!.body!).toString("utf8")).versions)).toContain("2.0.0");
    expect(db.versionReads).toBe(3);
  });
});

describe("dist-tags of a document that leaves held versions out", () => {
  it("a tag on a version not listed goes, and latest moves to the newest listed release (a prerelease only when there is no release)", () => {
    expect(visibleTags({ latest: "1.0.2", next: "2.0.0-rc.1", old: "0.9.0" }, ["0.9.0", "1.0.0", "1.0.1-beta.1", "2.0.0-rc.1"])).toEqual({ latest: "1.0.0", next: "2.0.0-rc.1", old: "0.9.0" });
    expect(visibleTags({ latest: "2.0.0" }, ["1.0.0-beta.1", "1.0.0-beta.2"])).toEqual({ latest: "1.0.0-beta.2" });
    expect(visibleTags({ latest: "1.0.0" }, ["1.0.0", "1.1.0"])).toEqual({ latest: "1.0.0" });
    expect(visibleTags({ latest: "1.0.0" }, [])).toEqual({});
  });
});
