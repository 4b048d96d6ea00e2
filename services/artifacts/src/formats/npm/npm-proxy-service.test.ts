import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Readable } from "node:stream";
import { digestCheck } from "../../domain/upload-checks.js";
import { upstreamsFactory, type UpstreamsDeps } from "../../proxy/file-fetch.js";
import { HOLDBACK_BYTES } from "../../proxy/file-spool.js";
import { MISS_TTL_MS, npmProxyFactory, type NpmProxyDeps } from "./npm-proxy-service.js";

/** An upstream registry on 127.0.0.1 whose answers each test sets, counting what it is asked. */
let server: Server;
let url: string;
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(500).end();
const asked: { path: string; ifNoneMatch: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push({ path: req.url ?? "", ifNoneMatch: req.headers["if-none-match"] });
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const TARBALL = Buffer.from("pretend this is a gzipped tarball");
const integrity = (b: Buffer) => `sha512-${createHash("sha512").update(b).digest("base64")}`;
const packument = (declared = integrity(TARBALL)) => ({
  name: "pkg",
  "dist-tags": { latest: "1.0.0" },
  versions: { "1.0.0": { name: "pkg", version: "1.0.0", dist: { tarball: `${url}pkg/-/pkg-1.0.0.tgz`, integrity: declared } } },
});

/** The proxy over an in-memory stand-in for its Postgres table and the artifact service. */
function proxyWith(opts: {
  readOnly?: boolean;
  clock: { t: number };
  staleMs?: number;
  screenVersions?: NpmProxyDeps["screenVersions"];
  screen?: UpstreamsDeps["screen"];
  locks?: Pick<UpstreamsDeps, "lockPool" | "documentLockPool">;
  /** The table's writes land, and a publish finishes after its body is read, only once this settles (a slow disk). */
  slowStore?: Promise<void>;
}) {
  const rows = new Map<string, { document: string | null; etag: string | null; fetched_at: Date }>();
  const stored = new Set<string>();
  const published: string[] = [];
  /** The documents the stand-in sent (a read whose caller names the row's fetched_at gets none). */
  const sent: string[] = [];
  const query = async (text: string, values: unknown[] = []) => {
    const key = `${values[0]}\0${values[1]}`;
    if (text.startsWith("select") && text.includes("npm_proxy_documents")) {
      const row = rows.get(key);
      if (!row) return { rows: [] };
      const known = values[2] instanceof Date && values[2].getTime() === row.fetched_at.getTime();
      if (!known && row.document !== null) sent.push(row.document);
      return { rows: [{ ...row, missing: row.document === null, document: known ? null : row.document }] };
    }
    if (text.startsWith("insert into")) {
      await opts.slowStore;
      rows.set(key, { document: values[2] as string | null, etag: values[3] as string | null, fetched_at: values[4] as Date });
    }
    if (text.startsWith("update")) rows.get(key)!.fetched_at = values[2] as Date;
    return { rows: [] };
  };
  const pool = { query, connect: async () => ({ query: async () => ({ rows: [{ got: true }] }), release: () => {} }) } as unknown as pg.Pool;
  // Stale-while-revalidate off unless a test turns it on: the upstream is asked before answering after the TTL.
  const settings = () => ({ metadataTtlMs: 60_000, metadataStaleMs: opts.staleMs ?? 0, blockPrivate: false });
  const upstreams = upstreamsFactory({
    pool,
    ...opts.locks,
    metadata: { find: async (_r: string, path: string) => (stored.has(path) ? ({ path } as never) : undefined) },
    artifacts: {
      // The artifact service's checks of declared digests (domain/upload-checks.ts), as a publish makes them.
      publish: async (a, source, _type, _actor, checks) => {
        const address = a as { path: string };
        const digests = digestCheck(checks?.digests ?? {});
        const sha256 = createHash("sha256");
        for await (const chunk of digests.through.reduce<Readable>((from, t) => from.pipe(t), source as Readable)) sha256.update(chunk as Buffer);
        digests.verify(sha256.digest("hex"));
        await opts.slowStore;
        published.push(address.path);
        stored.add(address.path);
        return { size: TARBALL.length, sha256: "", created: true, etag: undefined };
      },
    },
    upstreamOf: () => ({ url, credentials: { token: "upstream-token" } }),
    ...(opts.screen ? { screen: opts.screen } : {}),
    settings,
    readOnly: opts.readOnly ?? false,
    log: pino({ level: "silent" }),
    actor: { kind: "system", id: "npm-proxy" },
    now: () => opts.clock.t,
  });
  const deps: NpmProxyDeps = {
    pool,
    isProxy: () => true,
    upstreams,
    settings,
    readOnly: opts.readOnly ?? false,
    ...(opts.screenVersions ? { screenVersions: opts.screenVersions } : {}),
    log: pino({ level: "silent" }),
    now: () => opts.clock.t,
  };
  return { proxy: npmProxyFactory(deps), rows, published, sent };
}

describe("npm proxy service", () => {
  it("keeps a packument for the TTL, then revalidates it with If-None-Match; a 304 keeps the copy", async () => {
    const clock = { t: Date.now() };
    const { proxy } = proxyWith({ clock });
    asked.length = 0;
    handler = (req, res) => {
      if (req.headers["if-none-match"] === '"v1"') return res.writeHead(304).end();
      res.writeHead(200, { "content-type": "application/json", etag: '"v1"' }).end(JSON.stringify(packument()));
    };
    const first = await proxy.document("p", "pkg", "https://us.example/repository/p", false);
    expect(JSON.parse(first!.body).versions["1.0.0"].dist.tarball).toBe("https://us.example/repository/p/pkg/-/pkg-1.0.0.tgz");
    await proxy.document("p", "pkg", "https://us.example/repository/p", true);
    expect(asked).toHaveLength(1);
    clock.t += 61_000;
    const again = await proxy.document("p", "pkg", "https://us.example/repository/p", false);
    expect(asked).toEqual([{ path: "/pkg", ifNoneMatch: undefined }, { path: "/pkg", ifNoneMatch: '"v1"' }]);
    expect(again!.body).toBe(first!.body);
    expect(again!.headers).toEqual({});
  });

  it("stale-while-revalidate: after the TTL the cached copy is answered at once (Warning 110, Age) and the upstream asked in the background; the next read has its new copy; past the window it waits", async () => {
    const clock = { t: Date.now() };
    const { proxy } = proxyWith({ clock, staleMs: 3_600_000 });
    asked.length = 0;
    let answer: object = packument();
    let release = () => {};
    let gate: Promise<void> = Promise.resolve();
    handler = (_req, res) => void gate.then(() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer)));
    const base = "https://us.example/repository/p";
    expect(Object.keys(JSON.parse((await proxy.document("p", "pkg", base, false))!.body).versions)).toEqual(["1.0.0"]);
    // The upstream has a new version, and is slow to answer.
    answer = { ...packument(), "dist-tags": { latest: "1.1.0" }, versions: { ...packument().versions, "1.1.0": { name: "pkg", version: "1.1.0", dist: { tarball: `${url}pkg/-/pkg-1.1.0.tgz`, integrity: "sha512-x" } } } };
    gate = new Promise((r) => (release = r));
    clock.t += 61_000;
    const stale = await proxy.document("p", "pkg", base, false);
    expect(Object.keys(JSON.parse(stale!.body).versions)).toEqual(["1.0.0"]);
    expect(stale!.headers).toEqual({ Warning: '110 - "Response is Stale"', Age: "61" });
    await vi.waitUntil(() => asked.length === 2);
    // Reads meanwhile share the one revalidation.
    await proxy.document("p", "pkg", base, false);
    expect(asked).toHaveLength(2);
    release();
    await vi.waitUntil(async () => Object.keys(JSON.parse((await proxy.document("p", "pkg", base, false))!.body).versions).length === 2);
    const fresh = await proxy.document("p", "pkg", base, false);
    expect(fresh!.headers).toEqual({});
    expect(asked).toHaveLength(2);
    // Past the TTL and the window: the upstream is asked before answering.
    answer = packument();
    clock.t += 61_000 + 3_600_000;
    expect(Object.keys(JSON.parse((await proxy.document("p", "pkg", base, false))!.body).versions)).toEqual(["1.0.0"]);
    expect(asked).toHaveLength(3);
  });

  it("remembers a definite 404 briefly, never a 5xx; a failing upstream's cached copy is served with Warning and Age", async () => {
    const clock = { t: Date.now() };
    const { proxy } = proxyWith({ clock });
    asked.length = 0;
    handler = (_req, res) => res.writeHead(404).end("{}");
    expect(await proxy.packument("p", "gone")).toBeUndefined();
    expect(await proxy.packument("p", "gone")).toBeUndefined();
    expect(asked).toHaveLength(1);
    clock.t += MISS_TTL_MS + 1;
    await proxy.packument("p", "gone");
    expect(asked).toHaveLength(2);

    handler = (_req, res) => res.writeHead(503).end();
    await expect(proxy.packument("p", "pkg")).rejects.toMatchObject({ code: "bad_gateway" });
    await expect(proxy.packument("p", "pkg")).rejects.toMatchObject({ code: "bad_gateway" });
    expect(asked).toHaveLength(4);

    handler = (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument()));
    await proxy.packument("p", "pkg");
    handler = (_req, res) => res.writeHead(500).end();
    clock.t += 90_000;
    const stale = await proxy.document("p", "pkg", "https://us.example/repository/p", false);
    expect(stale!.headers).toEqual({ Warning: '110 - "Response is Stale"', Age: "90" });
  });

  it("checks a fetched tarball against dist.integrity: a mismatch is refused with 502 and nothing is stored; a match is fetched once for many callers", async () => {
    const clock = { t: Date.now() };
    const bad = proxyWith({ clock });
    handler = (req, res) => {
      if (req.url === "/pkg") return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument(integrity(Buffer.from("other bytes")))));
      res.writeHead(200).end(TARBALL);
    };
    await expect(bad.proxy.tarball("p", "pkg", "pkg/-/pkg-1.0.0.tgz")).rejects.toMatchObject({ code: "bad_gateway", message: expect.stringContaining("does not match") });
    expect(bad.published).toEqual([]);

    const good = proxyWith({ clock });
    asked.length = 0;
    handler = (req, res) => {
      if (req.url === "/pkg") return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument()));
      setTimeout(() => res.writeHead(200).end(TARBALL), 50);
    };
    await Promise.all(Array.from({ length: 5 }, () => good.proxy.tarball("p", "pkg", "pkg/-/pkg-1.0.0.tgz")));
    expect(good.published).toEqual(["pkg/-/pkg-1.0.0.tgz"]);
    expect(asked.filter((a) => a.path.endsWith(".tgz"))).toHaveLength(1);
    await expect(good.proxy.tarball("p", "pkg", "pkg/-/pkg-9.9.9.tgz")).rejects.toMatchObject({ code: "not_found" });
  });

  it("fetches as many uncached tarballs of uncached packages at once as there are lock connections: each revalidates its packument and is answered", async () => {
    // Like pg.Pool: `connect` waits while `max` connections are out; the lock is always had (the keys differ).
    const bounded = (max: number) => {
      let out = 0;
      const waiting: (() => void)[] = [];
      const connect = async () => {
        while (out >= max) await new Promise<void>((r) => waiting.push(r));
        out++;
        return { query: async () => ({ rows: [{ got: true }] }), release: () => (out--, waiting.shift()?.()) };
      };
      return { connect } as unknown as pg.Pool;
    };
    const clock = { t: Date.now() };
    const N = 4;
    const { proxy, published } = proxyWith({ clock, locks: { lockPool: bounded(N), documentLockPool: bounded(2) } });
    handler = (req, res) => {
      const name = /^\/(many-\d+)$/.exec(req.url ?? "")?.[1];
      if (!name) return res.writeHead(200).end(TARBALL);
      const doc = { name, "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { name, version: "1.0.0", dist: { tarball: `${url}${name}/-/${name}-1.0.0.tgz`, integrity: integrity(TARBALL) } } } };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(doc));
    };
    const all = Promise.all(Array.from({ length: N }, (_, i) => proxy.tarball("p", `many-${i}`, `many-${i}/-/many-${i}-1.0.0.tgz`)));
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<string>((r) => (timer = setTimeout(() => r("still waiting after 5 s"), 5_000)));
    expect(await Promise.race([all.then(() => "answered"), stuck])).toBe("answered");
    clearTimeout(timer);
    expect(published.sort()).toEqual(Array.from({ length: N }, (_, i) => `many-${i}/-/many-${i}-1.0.0.tgz`).sort());
  });

  /** A tarball larger than what a spool keeps back until it is stored (file-spool.ts), so its first half streams. */
  const BIG = randomBytes(4 * HOLDBACK_BYTES);
  /** An upstream serving the packument (declaring `declared`) and the first half of BIG, the rest once `release()` is called. */
  const halfThenHeld = (declared = integrity(BIG)) => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    handler = (req, res) => {
      if (req.url === "/pkg") return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument(declared)));
      res.writeHead(200, { "content-length": String(BIG.length) });
      res.write(BIG.subarray(0, BIG.length / 2));
      void released.then(() => res.end(BIG.subarray(BIG.length / 2)));
    };
    return release;
  };
  /** What a live body has given so far, and how it ends. */
  const received = (body: Readable) => {
    const chunks: Buffer[] = [];
    const ended = new Promise<Buffer>((resolve, reject) => {
      body.on("data", (c: Buffer) => chunks.push(c));
      body.on("end", () => resolve(Buffer.concat(chunks)));
      body.on("error", reject);
    });
    ended.catch(() => {});
    return { bytes: () => Buffer.concat(chunks).length, ended };
  };
  const arrived = async (r: { bytes: () => number }) => {
    while (r.bytes() === 0) await new Promise((t) => setTimeout(t, 5));
  };
  const PATH = "pkg/-/pkg-1.0.0.tgz";

  it("streams a tarball to its callers as it arrives, each from its first byte, and ends them once it is stored; not one the gate would hold", async () => {
    const { proxy, published } = proxyWith({ clock: { t: Date.now() } });
    asked.length = 0;
    const release = halfThenHeld();
    const first = await proxy.tarball("p", "pkg", PATH, { live: true });
    expect(first?.size).toBe(BIG.length);
    const one = received(first!.body);
    await arrived(one);
    expect(one.bytes()).toBeLessThan(BIG.length);
    // A caller that joins now gets the same fetch, from the first byte.
    const joined = await proxy.tarball("p", "pkg", PATH, { live: true });
    const two = received(joined!.body);
    release();
    expect((await one.ended).equals(BIG)).toBe(true);
    expect((await two.ended).equals(BIG)).toBe(true);
    expect(published).toEqual([PATH]);
    expect(asked.filter((a) => a.path.endsWith(".tgz"))).toHaveLength(1);
    // Stored: served from the store from now on.
    expect(await proxy.tarball("p", "pkg", PATH, { live: true })).toBeUndefined();

    // One the gate would hold (or refuse) is not streamed: its callers get the stored file's answer (the hold's refusal) or the gate's.
    const gated = proxyWith({ clock: { t: Date.now() }, screen: async () => ({ action: "HOLD", reason: "pkg@1.0.0 held by the screening gate" }) });
    const releaseGated = halfThenHeld();
    const answer = gated.proxy.tarball("p", "pkg", PATH, { live: true });
    releaseGated();
    expect(await answer).toBeUndefined();
    expect(gated.published).toEqual([PATH]);
  });

  it("breaks off the callers streamed a tarball whose digest does not match at its end; nothing is stored and the next caller gets a clean 502", async () => {
    const { proxy, published } = proxyWith({ clock: { t: Date.now() } });
    asked.length = 0;
    const release = halfThenHeld(integrity(Buffer.from("other bytes")));
    const live = await proxy.tarball("p", "pkg", PATH, { live: true });
    const got = received(live!.body);
    await arrived(got);
    release();
    await expect(got.ended).rejects.toMatchObject({ code: "bad_gateway", message: expect.stringContaining("does not match") });
    expect(got.bytes()).toBeLessThan(BIG.length);
    expect(published).toEqual([]);
    await expect(proxy.tarball("p", "pkg", PATH, { live: true })).rejects.toMatchObject({ code: "bad_gateway", message: expect.stringContaining("does not match") });
    expect(asked.filter((a) => a.path.endsWith(".tgz"))).toHaveLength(2);
  });

  it("leaves out of the packument the versions the gate would refuse or hold, and repairs latest; a warned one stays", async () => {
    const clock = { t: Date.now() };
    const actions: Record<string, "BLOCK" | "HOLD" | "WARN"> = { "1.2.0": "BLOCK", "1.1.0": "HOLD", "1.0.1": "WARN" };
    const { proxy } = proxyWith({ clock, screenVersions: async (_r, _n, versions) => new Map(versions.flatMap((v) => (actions[v] ? [[v, { action: actions[v]!, reason: "r" }] as const] : []))) });
    const version = (v: string) => ({ name: "pkg", version: v, dist: { tarball: `${url}pkg/-/pkg-${v}.tgz`, integrity: "sha512-x" } });
    handler = (_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: "pkg", "dist-tags": { latest: "1.2.0", next: "1.1.0" }, versions: Object.fromEntries(["1.0.0", "1.0.1", "1.1.0", "1.2.0"].map((v) => [v, version(v)])), time: { created: "2026-01-01T00:00:00Z", "1.2.0": "2026-01-02T00:00:00Z" } }));
    const doc = JSON.parse((await proxy.document("p", "pkg", "https://us.example/repository/p", false))!.body) as { "dist-tags": Record<string, string>; versions: Record<string, unknown>; time: Record<string, string> };
    expect(Object.keys(doc.versions)).toEqual(["1.0.0", "1.0.1"]);
    expect(doc["dist-tags"]).toEqual({ latest: "1.0.1" });
    expect(doc.time).toEqual({ created: "2026-01-01T00:00:00Z" });
  });

  it("keeps a packument read and the documents built from it while its row is unchanged; a row another node rewrote is read and built again", async () => {
    const clock = { t: Date.now() };
    const { proxy, rows, sent } = proxyWith({ clock });
    handler = (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument()));
    const base = "https://us.example/repository/p";
    const first = await proxy.document("p", "pkg", base, true);
    for (let i = 0; i < 3; i++) expect(await proxy.document("p", "pkg", base, true)).toEqual(first);
    // Fetched from the upstream and kept: Postgres never sent the document back.
    expect(sent).toEqual([]);
    expect(proxy.stats().packuments).toBe(1);

    // Another node revalidated it and the upstream had a new version: its row, with a new fetched_at.
    const newer = { ...packument(), "dist-tags": { latest: "1.1.0" }, versions: { ...packument().versions, "1.1.0": { name: "pkg", version: "1.1.0", dist: { tarball: `${url}pkg/-/pkg-1.1.0.tgz`, integrity: "sha512-x" } } } };
    rows.set("p\0pkg", { document: JSON.stringify(newer), etag: null, fetched_at: new Date(clock.t + 1000) });
    const after = await proxy.document("p", "pkg", base, true);
    expect(Object.keys(JSON.parse(after!.body).versions)).toEqual(["1.0.0", "1.1.0"]);
    expect(after!.etag).not.toBe(first!.etag);
    expect(await proxy.document("p", "pkg", base, true)).toEqual(after);
    expect(sent).toHaveLength(1);
  });

  it("answers a packument fetched from the upstream before its row is written; reads meanwhile take the copy kept, asking nobody", async () => {
    const clock = { t: Date.now() };
    let release!: () => void;
    const { proxy, rows } = proxyWith({ clock, slowStore: new Promise<void>((r) => (release = r)) });
    asked.length = 0;
    handler = (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument()));
    const base = "https://us.example/repository/p";
    const first = await proxy.document("p", "pkg", base, true);
    expect(Object.keys(JSON.parse(first!.body).versions)).toEqual(["1.0.0"]);
    expect(rows.has("p\0pkg")).toBe(false);
    expect(await proxy.document("p", "pkg", base, true)).toEqual(first);
    expect(asked).toHaveLength(1);
    release();
    await vi.waitUntil(() => rows.has("p\0pkg"));
    expect(await proxy.document("p", "pkg", base, true)).toEqual(first);
    expect(asked).toHaveLength(1);
  });

  it("read-only: serves what is cached, whatever its age, and fetches nothing more", async () => {
    const clock = { t: Date.now() };
    const { proxy, rows } = proxyWith({ clock, readOnly: true });
    rows.set("p\0pkg", { document: JSON.stringify(packument()), etag: null, fetched_at: new Date(clock.t - 86_400_000) });
    asked.length = 0;
    expect((await proxy.packument("p", "pkg"))?.doc.name).toBe("pkg");
    await expect(proxy.packument("p", "other")).rejects.toMatchObject({ code: "forbidden", message: expect.stringContaining("read-only") });
    await expect(proxy.tarball("p", "pkg", "pkg/-/pkg-1.0.0.tgz")).rejects.toMatchObject({ code: "forbidden", message: expect.stringContaining("read-only") });
    expect(asked).toEqual([]);
  });
});
