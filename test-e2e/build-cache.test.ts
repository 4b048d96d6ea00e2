import { createHash, randomBytes } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ensureDebianPackages } from "@svc/devstack";
import { run } from "./npm-clients.js";
import { storeObjects } from "./store-objects.js";
import { startSuite, type Suite } from "./suite.js";

/** The entry limit the suite runs with (svc.build-cache.max-entry-bytes), small enough for a test to go over. */
const ENTRY_LIMIT = 64 * 1024;
const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`x:${key}`).toString("base64")}` });

/**
 * Build caches through the gateway (docs/integration/build-caches.md): rights, the entry limit,
 * Bazel's digest check, least-recently-used eviction, the administration API, the meters, two
 * artifacts nodes on one cache, and the real clients: Debian's Gradle 4.4.1 (`--build-cache`,
 * FROM-CACHE in a clean copy) and Debian's Bazel (`bazel-bootstrap`, a remote cache hit).
 */
describe("build caches", () => {
  let s: Suite;
  let work: string;
  let admin: string;
  /** deploy (cache:read and cache:write, and repository rights) on every scope. */
  let deployer: string;
  /** read-only (cache:read, repository:read) on every scope. */
  let reader: string;
  /** Every repository right and no cache right. */
  let repositoryOnly: string;
  /** deploy on the cache `ci` alone. */
  let ciOnly: string;

  const put = (path: string, key: string, body: Buffer, headers: Record<string, string> = {}) => s.call("PUT", path, { key, body, headers });
  const get = (path: string, key: string) => s.call("GET", path, { key });
  /** A meter's value as the suite's /metrics shows it, summed over the nodes reporting it. */
  const meter = async (name: string, cache: string) => {
    const text = await (await s.call("GET", "/metrics", { key: admin })).text();
    return text
      .split("\n")
      .filter((l) => l.startsWith(`${name}{`) && l.includes(`cache="${cache}"`))
      .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
  };
  const caches = async () => (await (await s.call("GET", "/api/build-caches", { key: admin })).json()) as { name: string; maxBytes: number; maxEntryBytes: number; ownMaxBytes: boolean; usedBytes: number; entries: number }[];

  beforeAll(async () => {
    await ensureDebianPackages(["gradle", "bazel-bootstrap"]);
    s = await startSuite({ env: { SVC_BUILD_CACHE_MAX_ENTRY_BYTES: String(ENTRY_LIMIT) } });
    work = mkdtempSync(join(resolve(import.meta.dirname, "..", ".data"), "build-cache-"));
    admin = s.bootstrapKey;
    deployer = (await s.mint({ label: "cache-deployer", grants: [{ scope: "*", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "cache-reader", grants: [{ scope: "*", tokens: ["read-only"] }] })).key;
    repositoryOnly = (await s.mint({ label: "repository-only", grants: [{ scope: "*", tokens: ["repository:*"] }] })).key;
    ciOnly = (await s.mint({ label: "ci-only", grants: [{ scope: "ci", tokens: ["deploy"] }] })).key;
  }, 900_000);
  afterAll(async () => {
    await s?.stop();
    if (work) {
      // Bazel leaves its output tree read-only.
      await run("chmod", ["-R", "u+w", work], { cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
      rmSync(work, { recursive: true, force: true });
    }
  });

  it("asks for cache:read to read and cache:write to write; repository rights give nothing there", async () => {
    const entry = randomBytes(300);
    const path = "/cache/ci/0f530ffd62cae5b290535e90c9247459";
    const keyless = await s.call("GET", path);
    expect(keyless.status).toBe(401);
    expect(keyless.headers.get("www-authenticate")).toMatch(/^Basic /);
    const noCacheRight = await put(path, repositoryOnly, entry);
    expect(noCacheRight.status).toBe(403);
    expect(await noCacheRight.text()).toContain("does not hold cache:write on build cache ci");
    expect((await get(path, repositoryOnly)).status).toBe(403);
    expect((await put(path, reader, entry)).status).toBe(403);

    // The key as Basic's password, as Gradle sends it.
    expect((await s.call("PUT", path, { body: entry, headers: basic(ciOnly) })).status).toBe(201);
    const back = await s.call("GET", path, { headers: basic(reader) });
    expect(back.status).toBe(200);
    expect(Buffer.from(await back.arrayBuffer())).toEqual(entry);
    // Stored again: replaced, 200.
    expect((await put(path, deployer, entry)).status).toBe(200);
    // A grant on the cache `ci` reaches no other cache.
    const other = await put("/cache/other/0f530ffd62cae5b290535e90c9247459", ciOnly, entry);
    expect(other.status).toBe(403);
    expect(await other.text()).toContain("does not hold cache:write on build cache other");
    // HEAD answers the size without the bytes; a miss is 404.
    const head = await s.call("HEAD", path, { key: reader });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("300");
    expect((await get("/cache/ci/deadbeef", reader)).status).toBe(404);
    // A key of no build tool's shape is refused before anything.
    expect((await get("/cache/ci/a/b", admin)).status).toBe(400);
  });

  it("answers 413 to an entry over the entry limit, declared or streamed, and stores nothing", async () => {
    const big = randomBytes(ENTRY_LIMIT + 1);
    const declared = await put("/cache/ci/too-big-declared", deployer, big);
    expect(declared.status).toBe(413);
    expect(await declared.text()).toContain(`${ENTRY_LIMIT} bytes`);
    // Chunked, with no Content-Length: cut once it goes over.
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < big.length; i += 8192) c.enqueue(big.subarray(i, i + 8192));
        c.close();
      },
    });
    expect((await s.call("PUT", "/cache/ci/too-big-streamed", { key: deployer, body: stream })).status).toBe(413);
    expect((await get("/cache/ci/too-big-declared", deployer)).status).toBe(404);
    expect((await get("/cache/ci/too-big-streamed", deployer)).status).toBe(404);
    // At the limit: stored.
    expect((await put("/cache/ci/at-the-limit", deployer, big.subarray(0, ENTRY_LIMIT))).status).toBe(201);
  });

  it("refuses a Bazel cas/ entry whose content does not hash to its key; an ac/ entry is any content", async () => {
    const blob = Buffer.from("bazel output\n");
    const wrong = await put(`/cache/bz/cas/${sha("something else")}`, deployer, blob);
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain(sha(blob));
    expect((await get(`/cache/bz/cas/${sha("something else")}`, reader)).status).toBe(404);
    expect((await put(`/cache/bz/cas/${sha(blob)}`, deployer, blob)).status).toBe(201);
    const action = Buffer.from("an ActionResult naming the output");
    expect((await put(`/cache/bz/ac/${sha("the action")}`, deployer, action)).status).toBe(201);
    expect(Buffer.from(await (await get(`/cache/bz/cas/${sha(blob)}`, reader)).arrayBuffer())).toEqual(blob);
    expect(Buffer.from(await (await get(`/cache/bz/ac/${sha("the action")}`, reader)).arrayBuffer())).toEqual(action);
  });

  it("evicts the least recently used entries past the cap, a read counting as a use; a blob another cache or a repository holds stays", async () => {
    const created = await s.call("POST", "/api/build-caches", { key: admin, body: { name: "lru", maxBytes: 3000 } });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ name: "lru", maxBytes: 3000, ownMaxBytes: true, usedBytes: 0, entries: 0 });
    const a = randomBytes(1000);
    const b = randomBytes(1000);
    const c = randomBytes(1000);
    const d = randomBytes(1000);
    // b's content is also an artifact of a repository and an entry of another cache.
    await s.createRepository("raw-beside-caches", "raw");
    expect((await s.call("PUT", "/repository/raw-beside-caches/b.bin", { key: admin, body: b })).status).toBe(201);
    expect((await put("/cache/lru-other/b", deployer, b)).status).toBe(201);
    for (const [k, v] of [["a", a], ["b", b], ["c", c]] as const) expect((await put(`/cache/lru/${k}`, deployer, v)).status).toBe(201);
    // a read now: b is the least recently used.
    expect((await get("/cache/lru/a", reader)).status).toBe(200);
    expect((await put("/cache/lru/d", deployer, d)).status).toBe(201);
    expect((await get("/cache/lru/b", reader)).status).toBe(404);
    for (const k of ["a", "c", "d"]) expect((await get(`/cache/lru/${k}`, reader)).status).toBe(200);
    // b's blob is still held by the repository and by the other cache.
    expect(Buffer.from(await (await s.call("GET", "/repository/raw-beside-caches/b.bin", { key: admin })).arrayBuffer())).toEqual(b);
    expect(Buffer.from(await (await get("/cache/lru-other/b", reader)).arrayBuffer())).toEqual(b);
    expect((await caches()).find((x) => x.name === "lru")).toMatchObject({ usedBytes: 3000, entries: 3 });

    // Reads in the order c, a, d: a lowered cap evicts c first, then a.
    for (const k of ["c", "a", "d"]) expect((await get(`/cache/lru/${k}`, reader)).status).toBe(200);
    const lowered = await s.call("PATCH", "/api/build-caches/lru", { key: admin, body: { maxBytes: 1500 } });
    expect(lowered.status).toBe(200);
    expect(await lowered.json()).toMatchObject({ maxBytes: 1500, usedBytes: 1000, entries: 1 });
    expect((await get("/cache/lru/d", reader)).status).toBe(200);
    expect((await get("/cache/lru/c", reader)).status).toBe(404);
    expect((await get("/cache/lru/a", reader)).status).toBe(404);
    await vi.waitUntil(async () => (await meter("svc_build_cache_evictions_total", "lru")) === 3, { timeout: 30_000, interval: 500 });
  });

  it("lists and configures caches with /api/build-caches; a cache first used without being created has the default cap", async () => {
    expect((await put("/cache/made-by-use/abc123", deployer, Buffer.from("x"))).status).toBe(201);
    const listed = await caches();
    expect(listed.find((x) => x.name === "made-by-use")).toMatchObject({ maxBytes: 10 * 2 ** 30, maxEntryBytes: ENTRY_LIMIT, ownMaxBytes: false, usedBytes: 1, entries: 1 });
    expect((await s.call("POST", "/api/build-caches", { key: admin, body: { name: "made-by-use" } })).status).toBe(409);
    const unknownField = await s.call("POST", "/api/build-caches", { key: admin, body: { name: "x1", maxBytes: 10, ttl: 5 } });
    expect(unknownField.status).toBe(400);
    expect((await s.call("POST", "/api/build-caches", { key: admin, body: { name: "bad name" } })).status).toBe(400);
    expect((await s.call("POST", "/api/build-caches", { key: admin, body: { name: "x2", maxBytes: 0 } })).status).toBe(400);
    // Administration needs manage rights, which a deploy key lacks.
    expect((await s.call("GET", "/api/build-caches", { key: deployer })).status).toBe(403);
    expect((await s.call("POST", "/api/build-caches", { key: deployer, body: { name: "x3" } })).status).toBe(403);
    // Back to the default cap, then removed with its entries.
    expect(await (await s.call("PATCH", "/api/build-caches/made-by-use", { key: admin, body: { maxBytes: null, maxEntryBytes: 10 } })).json()).toMatchObject({ ownMaxBytes: false, maxEntryBytes: 10 });
    expect((await s.call("DELETE", "/api/build-caches/made-by-use", { key: admin })).status).toBe(204);
    expect((await get("/cache/made-by-use/abc123", reader)).status).toBe(404);
    expect((await s.call("GET", "/api/build-caches/made-by-use", { key: admin })).status).toBe(404);
  });

  it("POST /api/caches {name, maxBytes} makes a build cache that GET /api/caches lists beside this node's read caches; PATCH and DELETE /api/caches/<name> change it", async () => {
    const made = await s.call("POST", "/api/caches", { key: admin, body: { name: "via-caches", maxBytes: 4096 } });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ name: "via-caches", maxBytes: 4096 });
    expect((await s.call("POST", "/api/caches", { key: admin, body: { name: "via-caches", maxBytes: 4096 } })).status).toBe(409);
    const listed = (await (await s.call("GET", "/api/caches", { key: admin })).json()) as { node: string; caches: { name: string }[]; buildCaches: { name: string; maxBytes: number }[] };
    expect(listed.caches.length).toBeGreaterThan(0);
    expect(listed.buildCaches.find((c) => c.name === "via-caches")).toMatchObject({ maxBytes: 4096 });
    expect(await (await s.call("PATCH", "/api/caches/via-caches", { key: admin, body: { maxBytes: 8192 } })).json()).toMatchObject({ maxBytes: 8192 });
    // "Clear caches on this node" is still the gateway's own.
    expect(await (await s.call("POST", "/api/caches/clear", { key: admin })).json()).toMatchObject({ cleared: expect.any(Array) });
    expect((await s.call("DELETE", "/api/caches/via-caches", { key: admin })).status).toBe(204);
    expect(await caches()).not.toContainEqual(expect.objectContaining({ name: "via-caches" }));
    // A key that may not manage gets neither.
    expect((await s.call("POST", "/api/caches", { key: deployer, body: { name: "nope" } })).status).toBe(403);
  });

  it("counts hits, misses and bytes in and out per cache", async () => {
    const entry = randomBytes(777);
    expect((await put("/cache/metered/k1", deployer, entry)).status).toBe(201);
    expect((await get("/cache/metered/k1", reader)).status).toBe(200);
    expect((await get("/cache/metered/k1", reader)).status).toBe(200);
    expect((await get("/cache/metered/k2", reader)).status).toBe(404);
    await vi.waitUntil(
      async () =>
        (await meter("svc_build_cache_hits_total", "metered")) === 2 &&
        (await meter("svc_build_cache_misses_total", "metered")) === 1 &&
        (await meter("svc_build_cache_bytes_in_total", "metered")) === 777 &&
        (await meter("svc_build_cache_bytes_out_total", "metered")) === 2 * 777,
      { timeout: 30_000, interval: 500 },
    );
  });

  it("keeps an entry's blob through the walks' reclaim, which takes an orphan beside it", async () => {
    const store = storeObjects(s);
    try {
      const entry = randomBytes(500);
      expect((await put("/cache/walked/kept", deployer, entry)).status).toBe(201);
      const orphan = randomBytes(64);
      await store.writeBlob(sha(orphan), orphan);
      // Both older than svc.storage.reclaim-grace (the filesystem dates its files; this file runs there).
      for (const b of [entry, orphan]) store.backdate!({ blob: sha(b) }, 2 * 3_600_000);
      const started = await s.call("POST", "/api/walks/run", { key: admin });
      expect(started.status).toBe(202);
      const id = ((await started.json()) as { id: string }).id;
      const run = await vi.waitUntil(
        async () => ((await (await s.call("GET", "/api/walks/rebuild/runs", { key: admin })).json()) as { id: string; outcome: string }[]).find((r) => r.id === id && r.outcome !== "running"),
        { timeout: 60_000, interval: 500 },
      );
      expect(run.outcome).toBe("succeeded");
      expect(await store.hasBlob(sha(orphan))).toBe(false);
      const back = await get("/cache/walked/kept", reader);
      expect(back.status).toBe(200);
      expect(Buffer.from(await back.arrayBuffer())).toEqual(entry);
    } finally {
      store.close();
    }
  });

  it("serves one cache from two artifacts nodes", async () => {
    const node = await s.startReplica("artifacts");
    const gateway = await s.startGateway({ SVC_ARTIFACTS_URL: node.url });
    try {
      const entry = randomBytes(2048);
      expect((await put("/cache/shared/written-on-the-first", deployer, entry)).status).toBe(201);
      const there = await fetch(`${gateway.url}/cache/shared/written-on-the-first`, { headers: { "service-repository-key": reader } });
      expect(there.status).toBe(200);
      expect(Buffer.from(await there.arrayBuffer())).toEqual(entry);
      const back = randomBytes(100);
      expect((await fetch(`${gateway.url}/cache/shared/written-on-the-second`, { method: "PUT", body: back, headers: { "service-repository-key": deployer } })).status).toBe(201);
      expect(Buffer.from(await (await get("/cache/shared/written-on-the-second", reader)).arrayBuffer())).toEqual(back);
      expect((await caches()).find((x) => x.name === "shared")).toMatchObject({ usedBytes: 2148, entries: 2 });
    } finally {
      await gateway.stop();
      await node.stop();
    }
  });

  describe("with the real clients", () => {
    const env = (dir: string) => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dir, "home"), GRADLE_USER_HOME: join(dir, "gradle-home"), LANG: "C.UTF-8" });

    it("gradle --build-cache stores task outputs and takes them FROM-CACHE in a clean copy; an entry over the limit is answered 413 and the build goes on", async () => {
      const project = join(work, "gradle-1");
      mkdirSync(project, { recursive: true });
      // :small's output fits the entry limit; :large's (random, so it does not compress) does not.
      writeFileSync(
        join(project, "build.gradle"),
        `task small {
  def out = file("$buildDir/small.txt")
  inputs.property("greeting", "hello build cache")
  outputs.file(out)
  outputs.cacheIf { true }
  doLast { out.parentFile.mkdirs(); out.text = "hello from gradle" }
}
task large {
  def out = file("$buildDir/large.bin")
  inputs.property("size", ${ENTRY_LIMIT * 2})
  outputs.file(out)
  outputs.cacheIf { true }
  doLast { out.parentFile.mkdirs(); def b = new byte[${ENTRY_LIMIT * 2}]; new Random(7).nextBytes(b); out.bytes = b }
}
`,
      );
      writeFileSync(
        join(project, "settings.gradle"),
        `rootProject.name = 'cached'
buildCache {
  local { enabled = false }
  remote(HttpBuildCache) {
    url = '${s.gatewayUrl}/cache/gradle-ci/'
    push = true
    credentials { username = 'x'; password = '${deployer}' }
  }
}
`,
      );
      const gradle = (dir: string) => run("gradle", ["--no-daemon", "--console=plain", "--build-cache", "-i", "small", "large"], { cwd: dir, env: env(dir), timeoutMs: 600_000 });
      const first = await gradle(project);
      expect(first.code, first.output).toBe(0);
      expect(first.output).not.toMatch(/FROM-CACHE/);
      // Gradle 4.4 says so, builds on, and stops using the remote cache for the rest of that build.
      expect(first.output).toMatch(/Could not store entry \w+ for task ':large' in remote build cache: .*response status 413: Payload Too Large/);
      const stored = (await caches()).find((x) => x.name === "gradle-ci");
      // :small's entry only: :large's was refused with 413, and the build went on.
      expect(stored).toMatchObject({ entries: 1 });

      const copy = join(work, "gradle-2");
      cpSync(project, copy, { recursive: true, filter: (src) => !/[/\\](build|\.gradle|home|gradle-home)$/.test(src) });
      const second = await gradle(copy);
      expect(second.code, second.output).toBe(0);
      expect(second.output).toMatch(/:small FROM-CACHE/);
      expect(second.output).not.toMatch(/:large FROM-CACHE/);
    }, 900_000);

    it("bazel build with --remote_cache stores the action and hits it from a clean copy", async () => {
      const workspace = join(work, "bazel-1");
      mkdirSync(workspace, { recursive: true });
      writeFileSync(join(workspace, "WORKSPACE"), "");
      writeFileSync(join(workspace, "BUILD"), 'genrule(name = "hello", outs = ["hello.txt"], cmd = "echo hello from bazel > $@")\n');
      const bazel = (dir: string) =>
        run(
          "bazel",
          [
            `--output_user_root=${join(dir, "..", `${dir.split("/").pop()}-out`)}`,
            "--batch",
            "build",
            `--remote_cache=${s.gatewayUrl}/cache/bazel-ci`,
            `--remote_header=Service-Repository-Key=${deployer}`,
            "--spawn_strategy=local",
            "//:hello",
          ],
          { cwd: dir, env: env(dir), timeoutMs: 600_000 },
        );
      const first = await bazel(workspace);
      expect(first.code, first.output).toBe(0);
      expect(first.output).not.toMatch(/remote cache hit/);
      const copy = join(work, "bazel-2");
      mkdirSync(copy, { recursive: true });
      cpSync(join(workspace, "WORKSPACE"), join(copy, "WORKSPACE"));
      cpSync(join(workspace, "BUILD"), join(copy, "BUILD"));
      const second = await bazel(copy);
      expect(second.code, second.output).toBe(0);
      expect(second.output).toMatch(/1 remote cache hit/);
      const stored = (await caches()).find((x) => x.name === "bazel-ci");
      expect(stored?.entries).toBeGreaterThanOrEqual(2);
    }, 900_000);
  });
});
