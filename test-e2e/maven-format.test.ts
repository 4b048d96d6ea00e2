import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ArtifactEvent } from "@svc/contracts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureMaven, jarProject, mavenScratch, mvn } from "./maven-client.js";
import type { Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";

const hex = (algo: string, data: Buffer | string) => createHash(algo).update(data).digest("hex");

/**
 * Maven, unmodified (Debian's), against a maven repository through the gateway with minted
 * keys: the key is the server password in settings.xml and Service-Repository-Name goes in
 * httpHeaders, so the keys are granted this repository only.
 */
describe("maven repositories with the real client", () => {
  const REPO = "maven";
  const ID = "svc";
  let s: Suite;
  let work: string;
  let url: string;
  let deployer: string;
  let reader: string;
  let events: Awaited<ReturnType<typeof collectArtifactEvents>>;
  let n = 0;

  beforeAll(async () => {
    [s] = await Promise.all([startSuite({ env: { SVC_REPOSITORY: REPO, SVC_REPOSITORY_FORMAT: "maven" } }), ensureMaven()]);
    work = mkdtempSync(join(inject("dataDir"), "maven-client-"));
    url = `${s.gatewayUrl}/repository/${REPO}`;
    deployer = (await s.mint({ label: "ci", grants: [{ scope: REPO, tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "build", grants: [{ scope: REPO, tokens: ["read-only"] }] })).key;
    events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === REPO);
  }, 900_000);
  afterAll(async () => {
    await events?.close();
    await s?.stop();
  });

  const scratch = (key?: string) => mavenScratch(join(work, `run-${++n}`), { id: ID, repository: REPO, key });
  const project = (artifactId: string, version: string, extra: { greeting?: string; dependsOn?: string; uses?: string } = {}) =>
    jarProject(join(work, `${artifactId}-${version}-${++n}`), { groupId: "com.example", artifactId, version, url, id: ID, ...extra });
  const expectOk = (r: Run) => {
    if (r.code !== 0) throw new Error(`mvn exit ${r.code}:\n${r.output.slice(-4000)}`);
  };
  const get = async (path: string, key = reader) => {
    const r = await s.call("GET", `/repository/${REPO}/${path}`, { key, headers: { "service-repository-name": REPO } });
    return { status: r.status, text: await r.text() };
  };
  const put = (path: string, body: string | Uint8Array, key = deployer) => s.call("PUT", `/repository/${REPO}/${path}`, { key, body, headers: { "service-repository-name": REPO } });

  it("mvn deploy of a jar project stores the jar and POM, answers their checksums and writes maven-metadata.xml; the events carry the coordinates", async () => {
    const dir = project("greeter", "1.0");
    expectOk(await mvn(scratch(deployer), ["deploy"], dir));
    const jar = readFileSync(join(dir, "target", "greeter-1.0.jar"));
    const base = "com/example/greeter/1.0/greeter-1.0";
    for (const algo of ["sha1", "md5", "sha256", "sha512"]) expect((await get(`${base}.jar.${algo}`)).text).toBe(hex(algo, jar));
    expect((await get(`${base}.pom`)).text).toContain("<artifactId>greeter</artifactId>");
    const meta = await get("com/example/greeter/maven-metadata.xml");
    expect(meta.text).toContain("<release>1.0</release>");
    expect((await get("com/example/greeter/maven-metadata.xml.sha1")).text).toBe(hex("sha1", meta.text));
    await events.until("the jar's published event", (es) => es.some((e) => e.kind === "artifact.published" && e.path === `${base}.jar`));
    const published = events.events.find((e): e is ArtifactEvent => e.kind === "artifact.published" && e.path === `${base}.jar`)!;
    expect(published.package).toEqual({ format: "maven", name: "com.example:greeter", version: "1.0", file: "greeter-1.0.jar" });
  });

  it("a read needs a key: 401 with a Basic challenge, which Maven answers with the configured password", async () => {
    const r = await s.call("GET", `/repository/${REPO}/com/example/greeter/maven-metadata.xml`, { headers: { "service-repository-name": REPO } });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toMatch(/^Basic/);
    // A classifier's file, then resolved by the real client with the reader's key.
    const sources = Buffer.from("sources of greeter");
    expect((await put("com/example/greeter/1.0/greeter-1.0-sources.jar", sources)).status).toBe(201);
    expect((await put("com/example/greeter/1.0/greeter-1.0-sources.jar.sha1", hex("sha1", sources))).status).toBe(201);
    const m = scratch(reader);
    expectOk(await mvn(m, ["dependency:get", `-DremoteRepositories=${ID}::default::${url}`, "-Dartifact=com.example:greeter:1.0:jar:sources", "-Dtransitive=false"], m.dir));
    expect(readFileSync(join(m.local, "com/example/greeter/1.0/greeter-1.0-sources.jar"))).toEqual(sources);
  });

  it("a SNAPSHOT deployed twice leaves two timestamped files, the metadata names both, and -SNAPSHOT resolves the latest (dependency:get and a consumer build)", async () => {
    const first = project("greeter", "2.0-SNAPSHOT", { greeting: "first" });
    expectOk(await mvn(scratch(deployer), ["deploy"], first));
    const second = project("greeter", "2.0-SNAPSHOT", { greeting: "second" });
    expectOk(await mvn(scratch(deployer), ["deploy"], second));
    const files = (await (await s.call("GET", `/api/repositories/${REPO}/files?prefix=com/example/greeter/2.0-SNAPSHOT/`, { key: s.bootstrapKey })).json()) as { path: string }[];
    const jars = files.map((f) => f.path).filter((p) => /greeter-2\.0-\d{8}\.\d{6}-\d+\.jar$/.test(p));
    expect(jars).toHaveLength(2);
    const version = (await get("com/example/greeter/2.0-SNAPSHOT/maven-metadata.xml")).text;
    expect(version).toContain("<buildNumber>2</buildNumber>");
    const latest = /<extension>jar<\/extension>\s*<value>([^<]+)<\/value>/.exec(version)![1]!;
    expect(jars).toContain(`com/example/greeter/2.0-SNAPSHOT/greeter-${latest}.jar`);
    expect(latest).toMatch(/-2$/);
    const artifact = (await get("com/example/greeter/maven-metadata.xml")).text;
    expect(artifact).toContain("<version>1.0</version>");
    expect(artifact).toContain("<version>2.0-SNAPSHOT</version>");

    const m = scratch(reader);
    expectOk(await mvn(m, ["dependency:get", `-DremoteRepositories=${ID}::default::${url}`, "-Dartifact=com.example:greeter:2.0-SNAPSHOT", "-Dtransitive=false"], m.dir));
    const resolved = readFileSync(join(m.local, "com/example/greeter/2.0-SNAPSHOT/greeter-2.0-SNAPSHOT.jar"));
    expect(resolved).toEqual(readFileSync(join(second, "target", "greeter-2.0-SNAPSHOT.jar")));

    const consumer = project("consumer", "1.0", { dependsOn: "com.example:greeter:2.0-SNAPSHOT", uses: "C_greeter" });
    expectOk(await mvn(scratch(reader), ["package"], consumer));
    expect(existsSync(join(consumer, "target", "consumer-1.0.jar"))).toBe(true);
  });

  it("a release deployed again is refused with the server's reason, unless the repository allows redeploys", async () => {
    const dir = project("greeter", "1.0", { greeting: "changed" });
    const refused = await mvn(scratch(deployer), ["deploy"], dir);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/409 greeter-1\.0\.(jar|pom) of release com\.example:greeter:1\.0 is deployed already/);
    const allow = await s.call("PUT", `/api/repositories/${REPO}/maven`, { key: s.bootstrapKey, body: { releaseRedeploy: true } });
    expect(allow.status).toBe(200);
    try {
      expectOk(await mvn(scratch(deployer), ["deploy"], dir));
      const stored = await s.call("GET", `/repository/${REPO}/com/example/greeter/1.0/greeter-1.0.jar`, { key: reader, headers: { "service-repository-name": REPO } });
      expect(Buffer.from(await stored.arrayBuffer())).toEqual(readFileSync(join(dir, "target", "greeter-1.0.jar")));
    } finally {
      expect((await s.call("PUT", `/api/repositories/${REPO}/maven`, { key: s.bootstrapKey, body: { releaseRedeploy: false } })).status).toBe(200);
    }
  });

  it("a deploy without a key, and one with a read-only key, are refused with the server's reason", async () => {
    const dir = project("refused", "1.0");
    const none = await mvn(scratch(), ["deploy"], dir);
    expect(none.code).not.toBe(0);
    expect(none.output).toMatch(/401/);
    const readOnly = await mvn(scratch(reader), ["deploy"], dir);
    expect(readOnly.code).not.toBe(0);
    expect(readOnly.output).toMatch(/403 this key does not hold repository:write on maven/);
    expect((await get("com/example/refused/maven-metadata.xml")).status).toBe(404);
  });

  it("concurrent deploys of different versions all land in maven-metadata.xml", async () => {
    const [a, b] = [project("racer", "3.0"), project("racer", "3.1")];
    const runs = await Promise.all([mvn(scratch(deployer), ["deploy"], a), mvn(scratch(deployer), ["deploy"], b)]);
    for (const r of runs) expectOk(r);
    // And many more at once, straight over HTTP, each with its POM.
    const versions = Array.from({ length: 16 }, (_, i) => `4.${i}`);
    const answers = await Promise.all(versions.map((v) => put(`com/example/racer/${v}/racer-${v}.pom`, `<project><version>${v}</version></project>`)));
    expect(answers.map((r) => r.status)).toEqual(versions.map(() => 201));
    const meta = (await get("com/example/racer/maven-metadata.xml")).text;
    for (const v of ["3.0", "3.1", ...versions]) expect(meta).toContain(`<version>${v}</version>`);
  });

  it("a checksum upload that does not match the file is refused, and one that matches is taken", async () => {
    const body = Buffer.from("checked content");
    expect((await put("com/example/checked/1.0/checked-1.0.jar", body)).status).toBe(201);
    const wrong = await put("com/example/checked/1.0/checked-1.0.jar.sha1", "0".repeat(40));
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toMatch(/does not match checked-1\.0\.jar as stored/);
    expect((await put("com/example/checked/1.0/checked-1.0.jar.sha1", `${hex("sha1", body)}  checked-1.0.jar\n`)).status).toBe(201);
    expect((await put("com/example/checked/1.0/checked-1.0.jar.md5", hex("md5", body))).status).toBe(201);
    expect((await get("com/example/checked/1.0/checked-1.0.jar.sha1")).text).toBe(hex("sha1", body));
    expect((await get("com/example/checked/maven-metadata.xml")).text).toContain("<version>1.0</version>");
    // A version whose last file is removed leaves the metadata.
    expect((await s.call("DELETE", `/repository/${REPO}/com/example/checked/1.0/checked-1.0.jar`, { key: deployer, headers: { "service-repository-name": REPO } })).status).toBe(204);
    expect((await get("com/example/checked/maven-metadata.xml")).status).toBe(404);
    // A path outside the layout is no Maven file.
    const stray = await put("com/example/checked/1.0/other-1.0.jar", body);
    expect(stray.status).toBe(400);
  });
});
