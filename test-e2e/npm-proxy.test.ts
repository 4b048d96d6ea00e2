import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import pg from "pg";
import { freePort } from "@svc/devstack";
import { countingRelay } from "../bench/npm-proxy-bench.js";
import { closeNpmAgent, publish, publishDoc } from "../bench/npm-packages.js";
import { ensureVerdaccio, startVerdaccio, type RunningVerdaccio } from "../bench/verdaccio.js";
import { expectOk, run, scratchEnv, startNpmSuite, type Clients, type Run } from "./npm-clients.js";
import type { Suite } from "./suite.js";

const CLI = resolve(import.meta.dirname, "..", "packages", "cli", "dist", "svc.mjs");
/** Packages whose tarballs are all asked for at once. */
const MANY = 24;
/** Verdaccio kept between runs beside the npm clients (installed from the npm registry once). */
const VERDACCIO_TOOLS = resolve(import.meta.dirname, "..", ".data", "tools", "verdaccio");

/**
 * An npm proxy repository in front of Verdaccio (the upstream, on 127.0.0.1 over http, holding
 * packages this file publishes to it with npm), reached through a counting relay: the real npm
 * installs through the proxy; 20 requests at once for one uncached tarball make one upstream
 * fetch; with the upstream stopped a clean install still works from what the proxy holds; the
 * screening gate hides a malware version from the packument and refuses its download; the
 * upstream's token is never in any answer.
 */
describe("npm proxy repositories", () => {
  let s: Suite;
  let clients: Clients;
  let work: string;
  let origin: RunningVerdaccio;
  let relay: Awaited<ReturnType<typeof countingRelay>>;
  let admin: string;
  let reader: string;
  let proxyRegistry: string;
  /** A second artifacts node behind a gateway of its own (same Postgres and blob store). */
  let otherNode: { stop: () => Promise<void> } | undefined;
  let otherGateway: { url: string; stop: () => Promise<void> } | undefined;
  let n = 0;
  /** Every answer of the suite this file read, to check that the upstream's token is in none. */
  const seen: string[] = [];

  const npm = (args: string[], where: { cwd: string; env: Record<string, string> }): Promise<Run> => run(clients.npm, args, where);
  const scratch = (registry: string, token: string) => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(join(dir, "project"), { recursive: true });
    writeFileSync(join(dir, "npmrc"), `registry=${registry}\n${registry.replace(/^https?:/, "")}:_authToken=${token}\nalways-auth=true\n`);
    writeFileSync(join(dir, "project", "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    return { project: join(dir, "project"), env: scratchEnv(dir) };
  };
  /** Publishes a package to the upstream with npm (with `files` beside its index.js). */
  const publishUpstream = async (name: string, version: string, dependencies: Record<string, string> = {}, files: Record<string, Buffer> = {}) => {
    const dir = join(work, `pkg-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version, main: "index.js", license: "MIT", dependencies }));
    writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(`${name}@${version}`)};\n`);
    for (const [file, bytes] of Object.entries(files)) writeFileSync(join(dir, file), bytes);
    expectOk(await npm(["publish"], { cwd: dir, env: scratch(origin.registry, origin.token).env }));
  };
  const call = async (method: string, path: string, opts: Parameters<Suite["call"]>[2] = {}) => {
    const res = await s.call(method, path, opts);
    const text = await res.clone().text();
    seen.push(JSON.stringify([...res.headers]), text);
    return res;
  };
  /** npm installs `specs` into a clean project with a clean cache through the proxy; answers the installed versions. */
  const install = async (...specs: string[]) => {
    const c = scratch(proxyRegistry, reader);
    expectOk(await npm(["install", "--no-package-lock", ...specs], { cwd: c.project, env: c.env }));
    const version = (name: string) => (JSON.parse(readFileSync(join(c.project, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
    return version;
  };
  const until = async <T>(what: () => Promise<T | undefined>, ms = 30_000): Promise<T> => {
    for (const end = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 300))) {
      const got = await what();
      if (got !== undefined) return got;
      if (Date.now() > end) throw new Error("timed out waiting");
    }
  };

  beforeAll(async () => {
    const bin = ensureVerdaccio(VERDACCIO_TOOLS);
    const advisories = mkdtempSync(join(resolve(import.meta.dirname, "..", ".data"), "npm-proxy-osv-"));
    writeFileSync(
      join(advisories, "MAL-2026-0101.json"),
      JSON.stringify({ schema_version: "1.6.0", id: "MAL-2026-0101", modified: "2026-01-01T00:00:00Z", summary: "px-mal 1.0.1 steals tokens", affected: [{ package: { ecosystem: "npm", name: "px-mal" }, versions: ["1.0.1"] }] }),
    );
    ({ suite: s, clients, work } = await startNpmSuite("npm-proxy-", { SVC_ADVISORIES_SOURCES: advisories, SVC_MALWARE_ACTION: "BLOCK", SVC_PROXY_METADATA_TTL: "2s" }));
    admin = s.bootstrapKey;
    origin = await startVerdaccio(bin, join(work, "upstream"), await freePort());
    await publishUpstream("px-a", "1.0.0");
    await publishUpstream("px-a", "1.1.0");
    await publishUpstream("px-b", "1.0.0", { "px-a": "^1.0.0" });
    await publishUpstream("px-hot", "1.0.0");
    await publishUpstream("px-mal", "1.0.0");
    await publishUpstream("px-mal", "1.0.1");
    // More packages than the artifacts service has database connections (10), fetched at once below.
    await Promise.all(Array.from({ length: MANY }, (_, i) => publish(origin.registry, origin.token, publishDoc(origin.registry, `px-many-${i}`, "1.0.0"))));
    relay = await countingRelay(origin.registry, await freePort());
    reader = (await s.mint({ label: "proxy-reader", grants: [{ scope: "npm-proxy", tokens: ["read-only"] }] })).key;
    proxyRegistry = `${s.gatewayUrl}/repository/npm-proxy/`;
    const replica = await s.startReplica("artifacts");
    otherNode = replica;
    otherGateway = await s.startGateway({ SVC_ARTIFACTS_URL: replica.url });
  }, 900_000);
  afterAll(async () => {
    await otherGateway?.stop();
    await otherNode?.stop();
    await relay?.down().catch(() => {});
    await origin?.stop();
    await closeNpmAgent().catch(() => {});
    await s?.stop();
    if (work) rmSync(join(work, "upstream"), { recursive: true, force: true });
  });

  const create = (body: object) => call("POST", "/api/repositories", { key: admin, body });

  it("refuses a bad upstream with a problem naming the field; an http upstream on 127.0.0.1 only once block-private-import-hosts is false", async () => {
    const malformed = await create({ name: "npm-proxy", format: "npm", type: "proxy", upstream: { url: "not a url" } });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ field: "upstream.url" });
    const badCredentials = await create({ name: "npm-proxy", format: "npm", type: "proxy", upstream: { url: relay.url, credentials: { token: "" } } });
    expect(badCredentials.status).toBe(400);
    expect(await badCredentials.json()).toMatchObject({ field: "upstream.credentials" });
    // Blocked by default: plain http, and a loopback address.
    const privateHost = await create({ name: "npm-proxy", format: "npm", type: "proxy", upstream: { url: relay.url, credentials: { token: origin.token } } });
    expect(privateHost.status).toBe(400);
    const problem = (await privateHost.json()) as { field: string; detail: string };
    expect(problem.field).toBe("upstream.url");
    expect(problem.detail).toContain("block-private-import-hosts");
    expect((await call("GET", "/api/repositories/npm-proxy", { key: admin })).status).toBe(404);

    expect((await call("PUT", "/api/settings/block-private-import-hosts", { key: admin, body: { value: false } })).status).toBe(200);
    // Applied by the artifacts service within moments (it follows the stored settings).
    const created = await until(async () => {
      const res = await create({ name: "npm-proxy", format: "npm", type: "proxy", upstream: { url: relay.url, credentials: { token: origin.token } } });
      return res.status === 201 ? res : undefined;
    });
    expect(await created.json()).toMatchObject({ name: "npm-proxy", format: "npm", type: "proxy", upstream: { url: relay.url } });
    const shown = (await (await call("GET", "/api/repositories/npm-proxy", { key: admin })).json()) as Record<string, unknown>;
    expect(shown).toMatchObject({ type: "proxy", upstream: { url: relay.url } });
    const listed = (await (await call("GET", "/api/repositories", { key: admin })).json()) as { name: string; type: string }[];
    expect(listed.find((r) => r.name === "npm-proxy")?.type).toBe("proxy");
    expect(listed.find((r) => r.name === "npm")?.type).toBe("hosted");
  });

  it("npm installs through the proxy: packuments (full and abbreviated) with tarball URLs of this server, tarballs fetched once and kept", async () => {
    const full = await call("GET", "/repository/npm-proxy/px-a", { key: reader });
    expect(full.status).toBe(200);
    const doc = (await full.json()) as { "dist-tags": Record<string, string>; versions: Record<string, { dist: { tarball: string; integrity: string } }> };
    expect(doc["dist-tags"].latest).toBe("1.1.0");
    expect(doc.versions["1.1.0"]!.dist.tarball).toBe(`${proxyRegistry}px-a/-/px-a-1.1.0.tgz`);
    expect(doc.versions["1.1.0"]!.dist.integrity).toMatch(/^sha512-/);
    const small = await call("GET", "/repository/npm-proxy/px-a", { key: reader, headers: { accept: "application/vnd.npm.install-v1+json" } });
    expect(small.headers.get("content-type")).toContain("application/vnd.npm.install-v1+json");
    const smallDoc = (await small.json()) as { versions: Record<string, { dist: { tarball: string } }> };
    expect(smallDoc.versions["1.0.0"]!.dist.tarball).toBe(`${proxyRegistry}px-a/-/px-a-1.0.0.tgz`);
    // Revalidation: the ETag answers 304.
    const again = await call("GET", "/repository/npm-proxy/px-a", { key: reader, headers: { "if-none-match": full.headers.get("etag")! } });
    expect(again.status).toBe(304);

    const version = await install("px-b");
    expect(version("px-b")).toBe("1.0.0");
    expect(version("px-a")).toBe("1.1.0");
    expect(relay.gets("px-a-1.1.0.tgz")).toBe(1);
    // Installed again (a clean npm cache): served from what the proxy holds, no second tarball fetch.
    await install("px-b");
    expect(relay.gets("px-a-1.1.0.tgz")).toBe(1);
    expect(relay.gets("px-b-1.0.0.tgz")).toBe(1);
    // An unknown package is npm's 404.
    expect((await call("GET", "/repository/npm-proxy/px-none", { key: reader })).status).toBe(404);
  });

  it("20 requests at once for one uncached tarball, spread over two artifacts nodes, make exactly one upstream fetch, and all get its bytes", async () => {
    const path = "/repository/npm-proxy/px-hot/-/px-hot-1.0.0.tgz";
    // The second node reads the repository list every 5 s: it serves the repository made by the
    // first test once it has (its packument, not the tarball, until then).
    await vi.waitUntil(async () => (await fetch(`${otherGateway!.url}/repository/npm-proxy/px-hot`, { headers: { "service-repository-key": reader } })).status === 200, { timeout: 30_000, interval: 500 });
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(`${i % 2 === 0 ? s.gatewayUrl : otherGateway!.url}${path}`, { headers: { "service-repository-key": reader } });
        return { status: res.status, size: (await res.arrayBuffer()).byteLength };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.size)).size).toBe(1);
    expect(relay.gets("px-hot-1.0.0.tgz")).toBe(1);
  });

  it("20 requests at once for one uncached packument, spread over two artifacts nodes, make exactly one upstream fetch", async () => {
    await publish(origin.registry, origin.token, publishDoc(origin.registry, "px-once", "1.0.0"));
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(`${i % 2 === 0 ? s.gatewayUrl : otherGateway!.url}/repository/npm-proxy/px-once`, { headers: { "service-repository-key": reader } });
        return { status: res.status, versions: Object.keys(((await res.json()) as { versions: Record<string, unknown> }).versions) };
      }),
    );
    expect(answers).toEqual(Array(20).fill({ status: 200, versions: ["1.0.0"] }));
    expect(relay.gets("/px-once")).toBe(1);
  });

  it("past the TTL a packument is answered from the cache at once, marked stale, while the upstream is asked in the background; the next read has the new version", async () => {
    const versions = async () => {
      const r = await call("GET", "/repository/npm-proxy/px-swr", { key: reader });
      expect(r.status).toBe(200);
      return { warning: r.headers.get("warning"), versions: Object.keys(((await r.json()) as { versions: Record<string, unknown> }).versions) };
    };
    await publish(origin.registry, origin.token, publishDoc(origin.registry, "px-swr", "1.0.0"));
    expect(await versions()).toEqual({ warning: null, versions: ["1.0.0"] });
    await publish(origin.registry, origin.token, publishDoc(origin.registry, "px-swr", "1.1.0"));
    // Past svc.proxy.metadata-ttl (2s), within svc.proxy.metadata-stale-while-revalidate (1h by default).
    await new Promise((r) => setTimeout(r, 2500));
    expect(await versions()).toEqual({ warning: '110 - "Response is Stale"', versions: ["1.0.0"] });
    await vi.waitUntil(async () => (await versions()).versions.length === 2, { timeout: 30_000, interval: 200 });
    expect(await versions()).toEqual({ warning: null, versions: ["1.0.0", "1.1.0"] });
  });

  it("a large proxied packument goes gzipped to a client that takes gzip, the same document as sent plain; a small one stays plain", async () => {
    for (let i = 0; i < 8; i++) await publish(origin.registry, origin.token, publishDoc(origin.registry, "px-big", `1.${i}.0`, { big: true }));
    const wire = (path: string, encoding: string) =>
      new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((done, reject) => {
        const u = new URL(s.gatewayUrl);
        const req = httpRequest({ host: u.hostname, port: u.port, path, headers: { "service-repository-key": reader, accept: "application/json", "accept-encoding": encoding } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (d: Buffer) => chunks.push(d));
          res.on("end", () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        });
        req.on("error", reject);
        req.end();
      });
    const plain = await wire("/repository/npm-proxy/px-big", "identity");
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const doc = JSON.parse(plain.body.toString("utf8")) as { versions: Record<string, unknown> };
    expect(Object.keys(doc.versions)).toHaveLength(8);
    // As npm asks: gzip, deflate.
    const zipped = await wire("/repository/npm-proxy/px-big", "gzip, deflate");
    expect(zipped.status).toBe(200);
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers.vary).toMatch(/accept-encoding/i);
    expect(zipped.headers.etag).toBe(plain.headers.etag);
    expect(zipped.body.length).toBeLessThan(plain.body.length / 2);
    expect(JSON.parse(gunzipSync(zipped.body).toString("utf8"))).toEqual(doc);
    // A small packument is not worth compressing.
    const small = await wire("/repository/npm-proxy/px-hot", "gzip, deflate");
    expect(small.status).toBe(200);
    expect(small.headers["content-encoding"]).toBeUndefined();
    // npm installs through it as before.
    expect((await install("px-big@1.7.0"))("px-big")).toBe("1.7.0");
  });

  it("fetches waiting on another node's fetch of the same files hold no database connection: a node with 16 such waiters still fetches another file at once", async () => {
    // 16 files whose upstream answers are held: the first node fetches them (each fetch holds its
    // lock, and a connection for it, until its file is stored); the second node asks for the same
    // 16 and waits for them. A 17th file asked of the second node must not wait behind those waiters.
    const WAITING = 16;
    const names = Array.from({ length: WAITING }, (_, i) => `px-wait-${i}`);
    await Promise.all([...names, "px-free"].map((name) => publish(origin.registry, origin.token, publishDoc(origin.registry, name, "1.0.0"))));
    const gateways = [s.gatewayUrl, otherGateway!.url];
    // Both nodes know the packages (their tarballs' upstream addresses) before anything is held.
    for (const gateway of gateways)
      for (const name of [...names, "px-free"]) {
        await vi.waitUntil(async () => (await fetch(`${gateway}/repository/npm-proxy/${name}`, { headers: { "service-repository-key": reader } })).status === 200, { timeout: 30_000, interval: 500 });
      }
    const tarball = (gateway: string, name: string) =>
      fetch(`${gateway}/repository/npm-proxy/${name}/-/${name}-1.0.0.tgz`, { headers: { "service-repository-key": reader } }).then(async (res) => ({ status: res.status, size: (await res.arrayBuffer()).byteLength }));
    relay.hold("/-/px-wait-");
    const db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
    try {
      const first = names.map((name) => tarball(gateways[0]!, name));
      await vi.waitUntil(() => relay.gets("/-/px-wait-") === WAITING, { timeout: 30_000, interval: 100 });
      const second = names.map((name) => tarball(gateways[1]!, name));
      // Until the second node's fetches have reached the lock (its lock connections appear), and a
      // moment more for the rest of them to reach it too.
      const lockSessions = async () => Number((await db.query("select count(*) as n from pg_stat_activity where application_name = 'svc-artifacts-proxy-locks' and query like '%advisory_lock%'")).rows[0].n);
      await vi.waitUntil(async () => (await lockSessions()) > WAITING, { timeout: 30_000, interval: 100 });
      await new Promise((r) => setTimeout(r, 2_000));
      const free = await within(tarball(gateways[1]!, "px-free"), "a fetch of another file on the node with the waiters");
      expect(free.status).toBe(200);
      relay.release();
      const answers = await Promise.all([...first, ...second]);
      expect(answers.map((a) => a.status)).toEqual(Array(2 * WAITING).fill(200));
      for (const name of names) expect(relay.gets(`/-/${name}-1.0.0.tgz`)).toBe(1);
    } finally {
      relay.release();
      await db.end();
    }
  });

  /** A meter's value as the suite's /metrics shows it: the lines matching summed (one per node). */
  const meter = async (line: RegExp) => {
    const text = await (await s.call("GET", "/metrics", { key: admin })).text();
    return text.split("\n").filter((l) => line.test(l)).reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
  };
  /** `p`, or a failure naming `what` if it has not settled within `ms` (a bound on a wait, not a measurement). */
  const within = <T>(p: Promise<T>, what: string, ms = 30_000): Promise<T> =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms).unref())]);
  /** The body's bytes as they come, until it ends or breaks off (`broken`). */
  const drain = async (body: ReadableStream<Uint8Array>, first: Uint8Array[] = []) => {
    const chunks = [...first];
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return { bytes: Buffer.concat(chunks), broken: false };
        chunks.push(value);
      }
    } catch {
      return { bytes: Buffer.concat(chunks), broken: true };
    }
  };
  const integrityOf = async (name: string, version: string) => {
    const doc = (await (await call("GET", `/repository/npm-proxy/${name}`, { key: reader })).json()) as { versions: Record<string, { dist: { integrity: string } }> };
    return doc.versions[version]!.dist.integrity;
  };
  const sha512 = (b: Buffer) => `sha512-${createHash("sha512").update(b).digest("base64")}`;

  it("a client receives the first bytes of an uncached tarball while the upstream still holds back the rest, then all of it, stored once", async () => {
    // Random bytes (gzip cannot shrink them): a tarball well past the 64 KiB a proxy keeps back until it is stored.
    await publishUpstream("px-stream", "1.0.0", {}, { "data.bin": randomBytes(512 * 1024) });
    const path = "/repository/npm-proxy/px-stream/-/px-stream-1.0.0.tgz";
    const integrity = await integrityOf("px-stream", "1.0.0");
    const { sent } = relay.hold("px-stream-1.0.0.tgz", { midway: true });
    try {
      const res = await within(s.call("GET", path, { key: reader }), "the answer while the upstream holds back half the tarball");
      await sent;
      expect(res.status).toBe(200);
      const length = Number(res.headers.get("content-length"));
      const body = res.body!.getReader();
      const first = await within(body.read(), "the first bytes while the upstream holds back half the tarball");
      expect(first.done).toBe(false);
      expect(first.value!.length).toBeGreaterThan(0);
      expect(first.value!.length).toBeLessThan(length);
      relay.release();
      body.releaseLock();
      const whole = await drain(res.body!, [first.value!]);
      expect(whole.broken).toBe(false);
      expect(whole.bytes.length).toBe(length);
      expect(sha512(whole.bytes)).toBe(integrity);
    } finally {
      relay.release();
    }
    // Stored as it streamed: served from the store, not fetched again.
    const again = await s.call("GET", path, { key: reader });
    expect(again.status).toBe(200);
    expect(sha512(Buffer.from(await again.arrayBuffer()))).toBe(integrity);
    expect(again.headers.get("etag")).toMatch(/^"/);
    expect(relay.gets("px-stream-1.0.0.tgz")).toBe(1);
  });

  it("a tarball found not to match its integrity at its end breaks off the client's response; nothing is stored and asking again is a clean 502", async () => {
    await publishUpstream("px-bad", "1.0.0", {}, { "data.bin": randomBytes(512 * 1024) });
    const path = "/repository/npm-proxy/px-bad/-/px-bad-1.0.0.tgz";
    const integrity = await integrityOf("px-bad", "1.0.0");
    const mismatches = await meter(/^svc_proxy_fetches_total\{[^}]*repository="npm-proxy"[^}]*outcome="mismatch"/);
    relay.corrupt("px-bad-1.0.0.tgz");
    try {
      const { sent } = relay.hold("px-bad-1.0.0.tgz", { midway: true });
      const res = await within(s.call("GET", path, { key: reader }), "the answer while the upstream holds back half the tarball");
      await sent;
      expect(res.status).toBe(200);
      const length = Number(res.headers.get("content-length"));
      relay.release();
      const got = await within(drain(res.body!), "the end of the broken-off answer");
      expect(got.broken).toBe(true);
      expect(got.bytes.length).toBeLessThan(length);
      // Not stored: asked again, it is fetched again and refused before any byte is sent.
      const again = await s.call("GET", path, { key: reader });
      expect(again.status).toBe(502);
      expect(await again.text()).toContain("does not match");
      expect(relay.gets("px-bad-1.0.0.tgz")).toBe(2);
      // Both refusals counted (the deployment's meters are collected from every node within moments).
      await until(async () => ((await meter(/^svc_proxy_fetches_total\{[^}]*repository="npm-proxy"[^}]*outcome="mismatch"/)) === mismatches + 2 ? true : undefined));
    } finally {
      relay.release();
      relay.intact("px-bad-1.0.0.tgz");
    }
    // The upstream's bytes right again: fetched, checked, served.
    const fixed = await s.call("GET", path, { key: reader });
    expect(fixed.status).toBe(200);
    expect(sha512(Buffer.from(await fixed.arrayBuffer()))).toBe(integrity);
  });

  it("fetches many different uncached tarballs at once (more than the database connections): every one answered", async () => {
    const answers = await Promise.all(
      Array.from({ length: MANY }, async (_, i) => {
        const res = await s.call("GET", `/repository/npm-proxy/px-many-${i}/-/px-many-${i}-1.0.0.tgz`, { key: reader });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(answers).toEqual(Array(MANY).fill(200));
    expect(relay.gets("/-/px-many-")).toBe(MANY);
  });

  it("publishing to a proxy repository is refused with npm's error", async () => {
    const dir = join(work, `pkg-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "px-local", version: "1.0.0", license: "MIT" }));
    const c = scratch(proxyRegistry, admin);
    const r = await npm(["publish"], { cwd: dir, env: c.env });
    expect(r.code).not.toBe(0);
    expect(r.output).toContain("405");
    expect(r.output).toContain("proxy repository");
    // Its dist-tags are the upstream's, read-only.
    const tags = await call("GET", "/repository/npm-proxy/-/package/px-a/dist-tags", { key: reader });
    expect(await tags.json()).toEqual({ latest: "1.1.0" });
    const tagged = await call("PUT", "/repository/npm-proxy/-/package/px-a/dist-tags/beta", { key: admin, body: JSON.stringify("1.0.0"), headers: { "content-type": "application/json" } });
    expect(tagged.status).toBe(405);
    expect(await tagged.text()).toContain("proxy repository");
  });

  it("the screening gate: a malware version is hidden from the packument (latest repaired) and its download refused with the reason", async () => {
    const doc = (await (await call("GET", "/repository/npm-proxy/px-mal", { key: reader })).json()) as { "dist-tags": Record<string, string>; versions: Record<string, unknown> };
    expect(Object.keys(doc.versions)).toEqual(["1.0.0"]);
    expect(doc["dist-tags"].latest).toBe("1.0.0");
    const refused = await call("GET", "/repository/npm-proxy/px-mal/-/px-mal-1.0.1.tgz", { key: reader });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("MAL-2026-0101");
    expect((await install("px-mal"))("px-mal")).toBe("1.0.0");
  });

  type ImportView = { state: string; packages: number; done: number; imported: number; skipped: number; held: number; refused: number; refusals: { path: string; reason: string }[]; export: string | null; target: string | null };
  const importDone = (url: string, gateway = s.gatewayUrl) =>
    until(async () => {
      const r = (await (await fetch(`${gateway}${url}`, { headers: { "service-repository-key": admin } })).json()) as ImportView;
      return r.state === "running" ? undefined : r;
    }, 120_000);

  it("imports a list of packages through the proxy and the gate into a hosted repository, with counts; bad requests change nothing", async () => {
    await publishUpstream("px-imp", "1.0.0");
    await publishUpstream("px-imp", "2.0.0");
    expect((await create({ name: "npm-imported", format: "npm" })).status).toBe(201);
    const refusedBodies = [
      ["/api/repositories/npm-imported/imports", { packages: ["px-imp"] }, 409],
      ["/api/repositories/npm-proxy/imports", { packages: [] }, 400],
      ["/api/repositories/npm-proxy/imports", { packages: ["px-imp"], target: "default" }, 400],
      ["/api/repositories/npm-proxy/imports", { packages: ["px-imp"], target: "npm-proxy" }, 400],
      ["/api/repositories/no-such/imports", { packages: ["px-imp"] }, 404],
    ] as const;
    for (const [path, body, status] of refusedBodies) {
      const res = await call("POST", path, { key: admin, body });
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(status);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
    }
    expect((await call("POST", "/api/repositories/npm-proxy/imports", { key: reader, body: { packages: ["px-imp"] } })).status).toBe(403);
    expect(((await (await call("GET", "/api/repositories/npm-proxy/imports", { key: admin })).json()) as unknown[]).length).toBe(0);

    const started = await call("POST", "/api/repositories/npm-proxy/imports", { key: admin, body: { packages: ["px-imp", "px-mal", "px-none-such", "px-a@1.0.0"], target: "npm-imported" } });
    expect(started.status).toBe(202);
    const location = started.headers.get("location")!;
    expect(location).toMatch(/^\/api\/repositories\/npm-proxy\/imports\/[0-9a-f-]{36}$/);
    const done = await importDone(location);
    // px-imp's two versions and px-a 1.0.0 are fetched; px-mal 1.0.0 was installed above; its
    // 1.0.1 is refused by the gate (malware), and px-none-such is not upstream.
    expect(done).toMatchObject({ state: "done", packages: 4, done: 4, imported: 3, skipped: 1, held: 0, refused: 2, target: "npm-imported" });
    expect(done.refusals.map((r) => r.path).sort()).toEqual(["px-mal/-/px-mal-1.0.1.tgz", "px-none-such"]);
    expect(done.refusals.find((r) => r.path.startsWith("px-mal"))!.reason).toContain("MAL-2026-0101");
    // Then exported into the hosted repository, from which npm installs it.
    const exported = await until(async () => {
      const e = (await (await call("GET", `/api/repositories/npm-proxy/exports/${done.export}`, { key: admin })).json()) as { state: string; copied: number };
      return e.state === "running" ? undefined : e;
    });
    expect(exported).toMatchObject({ state: "done" });
    const listed = (await (await call("GET", "/api/repositories/npm-proxy/imports", { key: admin })).json()) as { id: string }[];
    expect(listed.map((r) => r.id)).toEqual([location.split("/").pop()]);
    const hosted = (await (await call("GET", "/repository/npm-imported/px-imp", { key: admin })).json()) as { "dist-tags": Record<string, string>; versions: Record<string, unknown> };
    expect(Object.keys(hosted.versions).sort()).toEqual(["1.0.0", "2.0.0"]);
    expect(hosted["dist-tags"].latest).toBe("2.0.0");
    // Only what the import listed is copied: px-a at the version named (the proxy holds 1.1.0 too), nothing else the proxy holds.
    const pxA = (await (await call("GET", "/repository/npm-imported/px-a", { key: admin })).json()) as { versions: Record<string, unknown> };
    expect(Object.keys(pxA.versions)).toEqual(["1.0.0"]);
    expect((await call("GET", "/repository/npm-imported/px-hot", { key: admin })).status).toBe(404);
    const c = scratch(`${s.gatewayUrl}/repository/npm-imported/`, admin);
    expectOk(await npm(["install", "--no-package-lock", "px-imp@1.0.0"], { cwd: c.project, env: c.env }));
    // The fetches of the tests so far, by outcome (the gate's refusal of px-mal 1.0.1 among them), before a node restarts below.
    expect(await meter(/^svc_proxy_fetches_total\{[^}]*repository="npm-proxy"[^}]*outcome="stored"/)).toBeGreaterThanOrEqual(MANY);
    expect(await meter(/^svc_proxy_fetches_total\{[^}]*repository="npm-proxy"[^}]*outcome="refused"/)).toBeGreaterThanOrEqual(1);
    // Importing again (with the svc client) fetches nothing.
    const cli = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      const env = { PATH: process.env.PATH ?? "", SVC_URL: s.gatewayUrl, SVC_KEY: admin };
      execFile(process.execPath, [CLI, "repositories", "import", "npm-proxy", "px-imp", "--wait"], { env }, (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/^state\s+done$/m);
    expect(cli.stdout).toMatch(/^counts\s+1 of 1 packages: 0 imported, 2 skipped, 0 held, 0 refused$/m);
  });

  it("an import whose artifacts node is killed mid-way is resumed by the other node from where it was, and ends with every file", async () => {
    const names = Array.from({ length: 6 }, (_, i) => `px-r-${i}`);
    for (const name of names) await publishUpstream(name, "1.0.0");
    relay.hold("px-r-3-1.0.0.tgz");
    const started = await call("POST", "/api/repositories/npm-proxy/imports", { key: admin, body: { packages: names } });
    expect(started.status).toBe(202);
    const location = started.headers.get("location")!;
    await until(async () => (relay.gets("px-r-3-1.0.0.tgz") > 0 ? true : undefined));
    const midway = (await (await call("GET", location, { key: admin })).json()) as ImportView;
    expect(midway).toMatchObject({ state: "running", done: 3, imported: 3 });
    await s.stopService("artifacts", "SIGKILL");
    try {
      relay.release();
      // The other node notices the heartbeat stopped (15 s) and goes on from the fourth package.
      const done = await importDone(location, otherGateway!.url);
      expect(done).toMatchObject({ state: "done", packages: 6, done: 6, refused: 0 });
      expect(done.imported + done.skipped).toBe(6);
      expect(done.imported).toBeGreaterThanOrEqual(5);
      for (const name of names) {
        const res = await fetch(`${otherGateway!.url}/repository/npm-proxy/${name}/-/${name}-1.0.0.tgz`, { headers: { "service-repository-key": reader } });
        expect(res.status, name).toBe(200);
        await res.arrayBuffer();
      }
    } finally {
      relay.release();
      await s.startService("artifacts");
    }
  });

  it("with the upstream stopped, a clean install still works from the cache; stale packuments say so; what is not cached is a 502", async () => {
    await relay.down();
    // Past svc.proxy.metadata-ttl (2s): the packument is asked for again, the upstream fails, the cached copy is served stale.
    await new Promise((r) => setTimeout(r, 2500));
    const stale = await call("GET", "/repository/npm-proxy/px-a", { key: reader });
    expect(stale.status).toBe(200);
    expect(stale.headers.get("warning")).toBe('110 - "Response is Stale"');
    expect(Number(stale.headers.get("age"))).toBeGreaterThanOrEqual(2);
    const version = await install("px-b");
    expect(version("px-b")).toBe("1.0.0");
    expect(version("px-a")).toBe("1.1.0");
    const missing = await call("GET", "/repository/npm-proxy/px-never-fetched", { key: reader });
    expect(missing.status).toBe(502);
    // The meter says so.
    expect(await meter(/^svc_proxy_stale_total\{[^}]*repository="npm-proxy"/)).toBeGreaterThanOrEqual(1);
    await relay.up();
  });

  it("the upstream's token is in no answer", () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const text of seen) expect(text).not.toContain(origin.token);
  });
});
