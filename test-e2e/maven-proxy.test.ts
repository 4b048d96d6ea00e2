import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "@svc/devstack";
import { countingRelay } from "../bench/npm-proxy-bench.js";
import { ensureMaven, jarProject, mavenScratch, mvn } from "./maven-client.js";
import type { Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

const hex = (algo: string, data: Buffer | string) => createHash(algo).update(data).digest("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Maven and raw proxy repositories whose upstreams are repositories of the same suite, reached
 * through the gateway behind a counting relay (http on 127.0.0.1, allowed once
 * block-private-import-hosts is false): the real mvn resolves through the proxy, each file is
 * fetched once and checked against the upstream's .sha1, maven-metadata.xml is proxied with the
 * versions the gate refuses left out, and with the upstream gone what is cached is still served.
 */
describe("maven and raw proxy repositories", () => {
  const UP = "maven-up";
  const PROXY = "maven-proxy";
  const ID = "svc";
  let s: Suite;
  let work: string;
  let admin: string;
  let reader: string;
  /** The proxies' key at their upstreams (this suite's gateway): any repository, read only. */
  let upstreamCredentials: { username: string; password: string };
  let relay: Awaited<ReturnType<typeof countingRelay>>;
  let liar: Server | undefined;
  let liarUrl: string;
  let liarGets = 0;
  let n = 0;
  const jars = new Map<string, Buffer>();

  const expectOk = (r: Run) => {
    if (r.code !== 0) throw new Error(`mvn exit ${r.code}:\n${r.output.slice(-4000)}`);
  };
  const proxyUrl = () => `${s.gatewayUrl}/repository/${PROXY}`;
  const get = async (repository: string, path: string, method = "GET") => {
    const r = await s.call(method, `/repository/${repository}/${path}`, { key: admin });
    return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
  };
  /** Creates a proxy repository (retried: block-private-import-hosts reaches the artifacts service within moments). */
  const createProxy = (name: string, format: string, url: string, credentials?: object) =>
    eventually(`proxy repository ${name} created`, async () => {
      const r = await s.call("POST", "/api/repositories", { key: admin, body: { name, format, type: "proxy", upstream: { url, ...(credentials ? { credentials } : {}) } } });
      return r.status === 201 ? r : undefined;
    });
  /** mvn dependency:get of `artifact` through the proxy, into a fresh local repository; answers that repository. */
  const resolve = async (artifact: string): Promise<string> => {
    const m = mavenScratch(join(work, `run-${++n}`), { id: ID, repository: PROXY, key: reader });
    expectOk(await mvn(m, ["dependency:get", `-DremoteRepositories=${ID}::default::${proxyUrl()}`, `-Dartifact=${artifact}`, "-Dtransitive=false"], m.dir));
    return m.local;
  };

  beforeAll(async () => {
    [s] = await Promise.all([startSuite({ env: { SVC_REPOSITORY: UP, SVC_REPOSITORY_FORMAT: "maven", SVC_PROXY_METADATA_TTL: "1s" } }), ensureMaven()]);
    work = mkdtempSync(join(inject("dataDir"), "maven-proxy-"));
    admin = s.bootstrapKey;
    const deployer = (await s.mint({ label: "ci", grants: [{ scope: UP, tokens: ["deploy"] }] })).key;
    // The real mvn deploys the upstream's artifact, two versions.
    for (const version of ["1.0", "1.1", "2.0-SNAPSHOT"]) {
      const m = mavenScratch(join(work, `deploy-${version}`), { id: ID, repository: UP, key: deployer });
      const dir = jarProject(join(work, `lib-${version}`), { groupId: "com.example", artifactId: "lib", version, url: `${s.gatewayUrl}/repository/${UP}`, id: ID, greeting: `lib ${version}` });
      expectOk(await mvn(m, ["deploy"], dir));
      jars.set(version, readFileSync(join(dir, "target", `lib-${version}.jar`)));
    }
    reader = (await s.mint({ label: "build", grants: [{ scope: PROXY, tokens: ["read-only"] }] })).key;
    upstreamCredentials = { username: "maven", password: (await s.mint({ label: "proxy-upstream", grants: [{ scope: "*", tokens: ["repository:read"] }] })).key };
    relay = await countingRelay(s.gatewayUrl, await freePort());
    // An upstream whose answers declare a digest their bytes do not have (and one that declares none).
    liar = createServer((req, res) => {
      liarGets++;
      const body = `tampered ${req.url}`;
      res.writeHead(200, { "content-type": "text/plain", ...(req.url?.includes("plain") ? {} : { "x-checksum-sha256": hex("sha256", "the original") }) });
      res.end(body);
    });
    const port = await freePort();
    await new Promise<void>((done) => liar!.listen(port, "127.0.0.1", done));
    liarUrl = `http://127.0.0.1:${port}/`;
    expect((await s.call("PUT", "/api/settings/block-private-import-hosts", { key: admin, body: { value: false } })).status).toBe(200);
  }, 900_000);
  afterAll(async () => {
    await relay?.down().catch(() => {});
    await new Promise((done) => (liar ? liar.close(done) : done(undefined)));
    await s?.stop();
  });

  it("mvn resolves through a maven proxy: the jar fetched once from the upstream, checked, kept, with the server's own checksums", async () => {
    await createProxy(PROXY, "maven", `${relay.url}repository/${UP}`, upstreamCredentials);

    const local = await resolve("com.example:lib:1.1");
    expect(readFileSync(join(local, "com/example/lib/1.1/lib-1.1.jar"))).toEqual(jars.get("1.1"));
    // The jar and the upstream's .sha1 it was checked against: one GET each.
    expect(relay.gets("/lib-1.1.jar")).toBe(2);
    // Resolved again into a clean local repository: served from what the proxy holds.
    const again = await resolve("com.example:lib:1.1");
    expect(readFileSync(join(again, "com/example/lib/1.1/lib-1.1.jar"))).toEqual(jars.get("1.1"));
    expect(relay.gets("/lib-1.1.jar")).toBe(2);
    for (const algo of ["sha1", "md5", "sha256", "sha512"]) expect((await get(PROXY, `com/example/lib/1.1/lib-1.1.jar.${algo}`)).body.toString()).toBe(hex(algo, jars.get("1.1")!));
    // A checksum asked for before its file: the file is fetched (and checked) first.
    const pomSha1 = await get(PROXY, "com/example/lib/1.0/lib-1.0.pom.sha1");
    expect(pomSha1.status).toBe(200);
    expect(pomSha1.body.toString()).toBe(hex("sha1", (await get(UP, "com/example/lib/1.0/lib-1.0.pom")).body));
    expect((await get(PROXY, "com/example/none/1.0/none-1.0.jar")).status).toBe(404);
  }, 600_000);

  it("a SNAPSHOT resolves through the proxy: its version-level maven-metadata.xml is the upstream's, its timestamped jar fetched", async () => {
    const local = await resolve("com.example:lib:2.0-SNAPSHOT");
    expect(readFileSync(join(local, "com/example/lib/2.0-SNAPSHOT/lib-2.0-SNAPSHOT.jar"))).toEqual(jars.get("2.0-SNAPSHOT"));
    const path = "com/example/lib/2.0-SNAPSHOT/maven-metadata.xml";
    const upstream = (await get(UP, path)).body.toString();
    expect(upstream).toContain("<snapshotVersions>");
    expect((await get(PROXY, path)).body.toString()).toBe(upstream);
    const stamped = /<value>([^<]+)<\/value>/.exec(upstream)![1]!;
    expect((await get(PROXY, `com/example/lib/2.0-SNAPSHOT/lib-${stamped}.jar.sha1`)).body.toString()).toBe(hex("sha1", jars.get("2.0-SNAPSHOT")!));
  }, 600_000);

  it("maven-metadata.xml comes from the upstream with its versions; its checksums are of what is served", async () => {
    const meta = await get(PROXY, "com/example/lib/maven-metadata.xml");
    expect(meta.status).toBe(200);
    const text = meta.body.toString();
    expect(text).toMatch(/<version>1\.0<\/version>\s*<version>1\.1<\/version>/);
    expect(text).toContain("<release>1.1</release>");
    expect((await get(PROXY, "com/example/lib/maven-metadata.xml.sha1")).body.toString()).toBe(hex("sha1", text));
    expect((await get(PROXY, "com/example/none/maven-metadata.xml")).status).toBe(404);
  });

  it("versions the screening gate refuses are left out of a proxied maven-metadata.xml, latest and release repaired, and are not fetched", async () => {
    // A plain Maven layout over http (a raw repository, which the gate does not screen) lists a version the deny list names.
    await s.createRepository("maven-files", "raw");
    const files: Record<string, string> = {
      "com/example/tool/maven-metadata.xml":
        "<metadata><groupId>com.example</groupId><artifactId>tool</artifactId><versioning><latest>2.0</latest><release>2.0</release>" +
        "<versions><version>1.0</version><version>2.0</version></versions><lastUpdated>20260101000000</lastUpdated></versioning></metadata>\n",
      "com/example/tool/1.0/tool-1.0.jar": "tool 1.0",
      "com/example/tool/2.0/tool-2.0.jar": "tool 2.0",
      "com/example/tool/1.0/tool-1.0.pom": "<project/>",
    };
    for (const [path, body] of Object.entries(files)) {
      expect((await s.call("PUT", `/repository/maven-files/${path}`, { key: admin, body })).status).toBe(201);
      const sha1 = path.endsWith(".pom") ? "0".repeat(40) : hex("sha1", body);
      expect((await s.call("PUT", `/repository/maven-files/${path}.sha1`, { key: admin, body: sha1 })).status).toBe(201);
    }
    const entry = await s.call("POST", "/api/deny-list", { key: admin, body: { ecosystem: "Maven", name: "com.example:tool", versions: "[2.0,2.1)", reason: "a build from the compromised pipeline" } });
    expect(entry.status).toBe(201);
    await createProxy("maven-mirror", "maven", `${relay.url}repository/maven-files`, upstreamCredentials);

    const meta = await get("maven-mirror", "com/example/tool/maven-metadata.xml");
    expect(meta.status).toBe(200);
    const text = meta.body.toString();
    expect(text).not.toContain("<version>2.0</version>");
    expect(text).toContain("<versions><version>1.0</version></versions>");
    expect(text).toContain("<latest>1.0</latest><release>1.0</release>");
    expect((await get("maven-mirror", "com/example/tool/maven-metadata.xml.md5")).body.toString()).toBe(hex("md5", text));
    // The refused version's file is refused by the gate as it arrives (nothing stored); the allowed one is served.
    const refused = await get("maven-mirror", "com/example/tool/2.0/tool-2.0.jar");
    expect(refused.status).toBe(403);
    expect(refused.body.toString()).toMatch(/deny|compromised pipeline/);
    expect((await get("maven-mirror", "com/example/tool/1.0/tool-1.0.jar")).body.toString()).toBe("tool 1.0");
    // A file whose bytes are not what the upstream's .sha1 says: 502, nothing stored.
    const mismatch = await get("maven-mirror", "com/example/tool/1.0/tool-1.0.pom");
    expect(mismatch.status).toBe(502);
    expect(mismatch.body.toString()).toContain("does not match");
    expect((await get("maven-mirror", "com/example/tool/1.0/tool-1.0.pom")).status).toBe(502);
  });

  it("a proxy repository refuses deploys and removals with 405", async () => {
    for (const [method, path] of [
      ["PUT", "com/example/lib/1.2/lib-1.2.jar"],
      ["PUT", "com/example/lib/1.1/lib-1.1.jar.sha1"],
      ["PUT", "com/example/lib/maven-metadata.xml"],
      ["DELETE", "com/example/lib/1.1/lib-1.1.jar"],
    ] as const) {
      const r = await s.call(method, `/repository/${PROXY}/${path}`, { key: admin, body: method === "PUT" ? "x" : undefined });
      expect(r.status).toBe(405);
      expect(await r.text()).toContain("is a proxy repository");
    }
    expect((await get(PROXY, "com/example/lib/1.1/lib-1.1.jar")).status).toBe(200);
  });

  it("a raw proxy fetches a file once, checked against the upstream's X-Checksum-Sha256, and refuses one that does not match", async () => {
    await s.createRepository("raw-up", "raw");
    expect((await s.call("PUT", "/repository/raw-up/docs/guide.txt", { key: admin, body: "the guide" })).status).toBe(201);
    const upstream = await get("raw-up", "docs/guide.txt");
    expect(upstream.headers.get("x-checksum-sha256")).toBe(hex("sha256", "the guide"));
    await createProxy("raw-proxy", "raw", `${relay.url}repository/raw-up/`, upstreamCredentials);
    const first = await get("raw-proxy", "docs/guide.txt");
    expect(first.status).toBe(200);
    expect(first.body.toString()).toBe("the guide");
    expect((await get("raw-proxy", "docs/guide.txt")).body.toString()).toBe("the guide");
    expect(relay.gets("/raw-up/docs/guide.txt")).toBe(1);
    expect((await get("raw-proxy", "docs/missing.txt")).status).toBe(404);
    expect((await s.call("PUT", "/repository/raw-proxy/docs/new.txt", { key: admin, body: "x" })).status).toBe(405);
    expect((await s.call("DELETE", "/repository/raw-proxy/docs/guide.txt", { key: admin })).status).toBe(405);

    await createProxy("raw-liar", "raw", liarUrl);
    const tampered = await get("raw-liar", "docs/file.txt");
    expect(tampered.status).toBe(502);
    expect(tampered.body.toString()).toContain("does not match");
    expect((await get("raw-liar", "docs/file.txt")).status).toBe(502);
    expect(liarGets).toBe(2);
    // No digest declared: stored as it is.
    const plain = await get("raw-liar", "docs/plain.txt");
    expect(plain.status).toBe(200);
    expect(plain.body.toString()).toBe("tampered /docs/plain.txt");
  });

  it("imports an artifact's releases (and raw files) through the proxy into hosted repositories, with counts; a bad item is a 400 naming packages", async () => {
    const start = async (repository: string, body: object) => {
      const r = await s.call("POST", `/api/repositories/${repository}/imports`, { key: admin, body });
      expect(r.status, await r.clone().text()).toBe(202);
      return eventually(`import into ${repository} ended`, async () => {
        const rec = (await (await s.call("GET", r.headers.get("location")!, { key: admin })).json()) as { state: string; imported: number; skipped: number; refused: number; refusals: { path: string }[]; export: string | null };
        return rec.state === "running" ? undefined : rec;
      }, 120_000);
    };
    const bad = await s.call("POST", `/api/repositories/${PROXY}/imports`, { key: admin, body: { packages: ["com.example:lib", "not a coordinate"] } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: "packages", detail: expect.stringContaining("packages[1]") });
    await s.createRepository("maven-imported", "maven");
    // 1.1's pom and jar (resolved above, so skipped: 1.0 stays unfetched for the tests below);
    // com.example:none is not upstream.
    const done = await start(PROXY, { packages: ["com.example:lib:1.1", "com.example:none"], target: "maven-imported" });
    expect(done).toMatchObject({ state: "done", imported: 0, skipped: 2, refused: 1 });
    expect(done.refusals.map((r) => r.path)).toEqual(["com.example:none"]);
    await eventually("the export into maven-imported ended", async () => {
      const e = (await (await s.call("GET", `/api/repositories/${PROXY}/exports/${done.export}`, { key: admin })).json()) as { state: string };
      return e.state === "done" ? e : undefined;
    });
    // Only the version listed is copied (the proxy holds 2.0-SNAPSHOT's files too).
    expect((await get("maven-imported", "com/example/lib/1.1/lib-1.1.jar")).body).toEqual(jars.get("1.1"));
    expect((await get("maven-imported", "com/example/lib/1.1/lib-1.1.jar.sha1")).body.toString()).toBe(hex("sha1", jars.get("1.1")!));
    expect((await get("maven-imported", "com/example/lib/maven-metadata.xml")).body.toString()).toMatch(/<versions>\s*<version>1\.1<\/version>\s*<\/versions>/);
    expect((await get("maven-imported", "com/example/lib/2.0-SNAPSHOT/maven-metadata.xml")).status).toBe(404);

    expect((await s.call("PUT", "/repository/raw-up/docs/notes.txt", { key: admin, body: "notes" })).status).toBe(201);
    const raw = await start("raw-proxy", { packages: ["docs/guide.txt", "docs/notes.txt", "docs/absent.txt"] });
    expect(raw).toMatchObject({ state: "done", imported: 1, skipped: 1, refused: 1, export: null });
    expect((await get("raw-proxy", "docs/notes.txt")).body.toString()).toBe("notes");
  }, 600_000);

  it("with the upstream gone, cached files are still served (mvn still resolves), metadata stale with Warning 110, what is not cached 502", async () => {
    await relay.down();
    await sleep(1500);
    expect((await get(PROXY, "com/example/lib/1.1/lib-1.1.jar")).body).toEqual(jars.get("1.1"));
    const meta = await get(PROXY, "com/example/lib/maven-metadata.xml");
    expect(meta.status).toBe(200);
    expect(meta.headers.get("warning")).toMatch(/^110 /);
    expect(Number(meta.headers.get("age"))).toBeGreaterThanOrEqual(0);
    expect((await get(PROXY, "com/example/lib/1.0/lib-1.0.jar")).status).toBe(502);
    expect((await get("raw-proxy", "docs/guide.txt")).body.toString()).toBe("the guide");
    const local = await resolve("com.example:lib:1.1");
    expect(readFileSync(join(local, "com/example/lib/1.1/lib-1.1.jar"))).toEqual(jars.get("1.1"));
  }, 600_000);

  it("in read-only mode a proxy serves what it holds and fetches nothing (403)", async () => {
    for (const service of ["gateway", "artifacts"] as const) await s.stopService(service);
    for (const service of ["artifacts", "gateway"] as const) await s.startService(service, { SVC_READ_ONLY: "true" });
    await eventually("the proxy answering", async () => ((await get(PROXY, "com/example/lib/1.1/lib-1.1.jar").catch(() => undefined))?.status === 200 ? true : undefined));
    expect((await get(PROXY, "com/example/lib/1.1/lib-1.1.jar")).body).toEqual(jars.get("1.1"));
    expect((await get(PROXY, "com/example/lib/maven-metadata.xml")).body.toString()).toContain("<version>1.1</version>");
    const uncached = await get(PROXY, "com/example/lib/1.0/lib-1.0.jar");
    expect(uncached.status).toBe(403);
    expect(uncached.body.toString()).toContain("read-only");
    expect((await get("raw-proxy", "docs/other.txt")).status).toBe(403);
    expect((await s.call("POST", `/api/repositories/${PROXY}/imports`, { key: admin, body: { packages: ["com.example:lib"] } })).status).toBe(403);
  }, 300_000);
});
