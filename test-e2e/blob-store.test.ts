import { createHash, randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BlobStore } from "../packages/blobs/src/index.js";
import { createDb } from "../packages/kit/src/db.js";
import { artifactServiceFactory } from "../services/artifacts/src/domain/artifact-service.js";
import { metadataStoreFactory } from "../services/artifacts/src/store/metadata-store.js";
import { outboxStoreFactory } from "../services/artifacts/src/store/outbox-store.js";
import type { ArtifactsDatabase } from "../services/artifacts/src/store/schema.js";
import { storeObjects, type StoreObjects } from "./store-objects.js";
import { freshName, startSuite, type Suite } from "./suite.js";

const sha = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");
const tags = (xml: string, tag: string) => [...xml.matchAll(new RegExp(`<${tag}>([^<]+)</${tag}>`, "g"))].map((m) => m[1]);
const pom = (version: string) =>
  `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>lib</artifactId><version>${version}</version></project>\n`;

describe("the blob store and the path index", () => {
  let s: Suite;
  /** The suite's blob store behind the server's back (its folder, or its bucket in the S3 pass). */
  let objects: StoreObjects;
  const key = () => s.bootstrapKey;
  beforeAll(async () => {
    s = await startSuite();
    objects = storeObjects(s);
  }, 900_000);
  afterAll(async () => {
    objects?.close();
    await s?.stop();
  });

  // The filesystem only: a data folder is what the code before the blob store left; an S3
  // deployment began with the blob store and has no folder to migrate.
  if (process.env.SVC_TEST_STORAGE !== "s3") {
    /**
     * A data folder as the code before the blob store wrote it: every artifact a file at
     * repositories/<repository>/<path>, a hard link to its blob for what it published (with an
     * index row), a file of its own for content from before the blobs or a publish a crash cut
     * short (no row), and a row that names other content than the file (the file is what was
     * served). The new code, started on it, serves every file and index as before.
     */
    it("a data folder written before the blob store is migrated in place on start and served as before", async () => {
      const raw = freshName("legacy-raw");
      const mvn = freshName("legacy-mvn");
      await s.createRepository(raw, "raw");
      await s.createRepository(mvn, "maven");
      const put = async (repo: string, path: string, body: string | Buffer) => expect((await s.call("PUT", `/repository/${repo}/${path}`, { key: key(), body })).status).toBe(201);
      const lib = "com/example/lib";
      // What the old code published: rows, blobs (and Maven's version rows).
      await put(raw, "docs/indexed.txt", "indexed content");
      await put(raw, "docs/stale.txt", "what the row says");
      const jar10 = randomBytes(100);
      await put(mvn, `${lib}/1.0/lib-1.0.jar`, jar10);
      await put(mvn, `${lib}/1.0/lib-1.0.pom`, pom("1.0"));
      await s.stopService("artifacts");

      const store = s.storeRoot;
      const blobOf = (digest: string) => join(store, "blobs", "sha256", digest.slice(0, 2), digest);
      const file = (repo: string, path: string) => join(store, "repositories", repo, ...path.split("/"));
      const place = (repo: string, path: string, write: (at: string) => void, at?: Date) => {
        const f = file(repo, path);
        mkdirSync(join(f, ".."), { recursive: true });
        write(f);
        if (at) utimesSync(f, at, at);
      };
      const hourAgo = new Date(Date.now() - 3_600_000);
      // Published files, hard links to their blobs.
      place(raw, "docs/indexed.txt", (f) => linkSync(blobOf(sha("indexed content")), f));
      place(mvn, `${lib}/1.0/lib-1.0.jar`, (f) => linkSync(blobOf(sha(jar10)), f));
      place(mvn, `${lib}/1.0/lib-1.0.pom`, (f) => linkSync(blobOf(sha(pom("1.0"))), f));
      // A row naming other content than the file.
      place(raw, "docs/stale.txt", (f) => writeFileSync(f, "what the file holds"));
      // Files no row knows: one of its own, from before the blobs, and a Maven version whose deploy crashed.
      place(raw, "loose/no-row.bin", (f) => writeFileSync(f, "no row for me"), hourAgo);
      const jar20 = randomBytes(80);
      // (Deployed after 1.0: dated now.)
      place(mvn, `${lib}/2.0/lib-2.0.jar`, (f) => writeFileSync(f, jar20));
      place(mvn, `${lib}/2.0/lib-2.0.pom`, (f) => writeFileSync(f, pom("2.0")));

      await s.startService("artifacts");

      const get = async (repo: string, path: string, method = "GET") => {
        const r = await s.call(method, `/repository/${repo}/${path}`, { key: key() });
        return { status: r.status, etag: r.headers.get("etag"), length: r.headers.get("content-length"), lastModified: r.headers.get("last-modified"), body: Buffer.from(await r.arrayBuffer()) };
      };
      const served: [string, string, Buffer][] = [
        [raw, "docs/indexed.txt", Buffer.from("indexed content")],
        [raw, "docs/stale.txt", Buffer.from("what the file holds")],
        [raw, "loose/no-row.bin", Buffer.from("no row for me")],
        [mvn, `${lib}/1.0/lib-1.0.jar`, jar10],
        [mvn, `${lib}/1.0/lib-1.0.pom`, Buffer.from(pom("1.0"))],
        [mvn, `${lib}/2.0/lib-2.0.jar`, jar20],
        [mvn, `${lib}/2.0/lib-2.0.pom`, Buffer.from(pom("2.0"))],
      ];
      for (const [repo, path, bytes] of served) {
        const g = await get(repo, path);
        expect(g.status, path).toBe(200);
        expect(g.body.equals(bytes), path).toBe(true);
        expect(g.etag, path).toBe(`"${sha(bytes)}"`);
        const h = await get(repo, path, "HEAD");
        expect([h.status, h.etag, h.length], path).toEqual([200, g.etag, String(bytes.length)]);
      }
      // A file no row knew is dated by its modification time, as the walker's backfill dated it.
      expect(Date.parse((await get(raw, "loose/no-row.bin")).lastModified!)).toBe(Math.floor(hourAgo.getTime() / 1000) * 1000);

      // The listings say what is served.
      const listing = async (repo: string) => ((await (await s.call("GET", `/api/repositories/${repo}/files`, { key: key() })).json()) as { path: string; sha256: string; size: number }[]).map((f) => [f.path, f.sha256, f.size]);
      expect(await listing(raw)).toEqual([
        ["docs/indexed.txt", sha("indexed content"), 15],
        ["docs/stale.txt", sha("what the file holds"), 19],
        ["loose/no-row.bin", sha("no row for me"), 13],
      ]);
      expect((await listing(mvn)).map(([p]) => p)).toEqual([`${lib}/1.0/lib-1.0.jar`, `${lib}/1.0/lib-1.0.pom`, `${lib}/2.0/lib-2.0.jar`, `${lib}/2.0/lib-2.0.pom`]);
      // Maven's index has the version whose deploy crashed, and its checksums come from the blob.
      const meta = await s.call("GET", `/repository/${mvn}/${lib}/maven-metadata.xml`, { key: key() });
      expect(tags(await meta.text(), "version")).toEqual(["1.0", "2.0"]);
      const sha1 = await s.call("GET", `/repository/${mvn}/${lib}/2.0/lib-2.0.jar.sha1`, { key: key() });
      expect(await sha1.text()).toBe(createHash("sha1").update(jar20).digest("hex"));

      // The old tree is gone; the content is in blobs, once.
      expect(existsSync(join(store, "repositories"))).toBe(false);
      for (const [, , bytes] of served) expect(statSync(blobOf(sha(bytes))).isFile()).toBe(true);
      expect(s.output("artifacts").some((l) => /migrated/.test(l) && /"created":3/.test(l) && /"corrected":1/.test(l) && /"unchanged":3/.test(l))).toBe(true);

      // A second start finds nothing to migrate and serves the same.
      await s.stopService("artifacts");
      await s.startService("artifacts");
      expect((await get(raw, "loose/no-row.bin")).body.toString()).toBe("no row for me");
    });
  }

  /**
   * Two publishes of the same content, with a reclaim between their blob's commit and their
   * index rows' (the blob had no reference yet and the grace period is 0): both keep their content.
   */
  it("two publishes of the same content racing a reclaim keep their content", async () => {
    const repo = freshName("race");
    await s.createRepository(repo, "raw");
    const { db, pool } = createDb<ArtifactsDatabase>(s.databaseUrl, { max: 4 });
    const real = objects.blobStore();
    try {
      const metadata = metadataStoreFactory(db, pool);
      const body = `racing content ${randomBytes(8).toString("hex")}`;
      let committed = 0;
      let reclaimed: { sha256: string; size: number }[] | undefined;
      let release!: () => void;
      const bothCommitted = new Promise<void>((r) => (release = r));
      // Each publish's blob commit waits for the other's, then one reclaim runs before either row commits.
      const blobs: BlobStore = {
        ...real,
        commit: async (staged) => {
          const out = await real.commit(staged);
          if (++committed === 2) {
            reclaimed = await artifacts.reclaim([staged.sha256], 0);
            release();
          }
          await bothCommitted;
          return out;
        },
      };
      const artifacts = artifactServiceFactory({ blobs, metadata, outbox: outboxStoreFactory(db), deliver: async () => undefined, tenant: s.tenant });
      const actor = { kind: "key" as const, id: "race" };
      const addr = (path: string) => ({ repository: repo, path, segments: path.split("/") });
      const [a, b] = await Promise.all([artifacts.publish(addr("a.txt"), Readable.from([Buffer.from(body)]), null, actor), artifacts.publish(addr("b.txt"), Readable.from([Buffer.from(body)]), null, actor)]);
      // The reclaim did take the blob: the race happened.
      expect(reclaimed).toEqual([{ sha256: sha(body), size: body.length }]);
      expect([a.sha256, b.sha256]).toEqual([sha(body), sha(body)]);
      for (const path of ["a.txt", "b.txt"]) {
        const r = await s.call("GET", `/repository/${repo}/${path}`, { key: key() });
        expect(r.status, path).toBe(200);
        expect(await r.text(), path).toBe(body);
      }
      // Referenced now: a reclaim keeps it.
      expect(await artifacts.reclaim([sha(body)], 0)).toEqual([]);
      expect(await real.head(sha(body))).toBeDefined();
      // Nothing left staged.
      if (objects.kind === "filesystem") expect(readdirSync(join(s.storeRoot, "tmp"))).toEqual([]);
      else expect(await real.listStaged({ limit: 10 })).toEqual([]);
    } finally {
      real.close?.();
      await db.destroy();
    }
  });

  it("a path whose blob was deleted behind the server's back answers 404 to GET and HEAD, not a broken body", async () => {
    const repo = freshName("lost");
    await s.createRepository(repo, "raw");
    const body = `lost content ${randomBytes(8).toString("hex")}`;
    expect((await s.call("PUT", `/repository/${repo}/gone.txt`, { key: key(), body })).status).toBe(201);
    await objects.removeBlob(sha(body));
    for (const method of ["GET", "HEAD"]) expect((await s.call(method, `/repository/${repo}/gone.txt`, { key: key() })).status, method).toBe(404);
  });
});
