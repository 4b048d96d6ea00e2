import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureMaven, mavenScratch, mvn } from "./maven-client.js";
import { freshName, startSuite, type Suite } from "./suite.js";
import { adminCaller, eventually } from "./upstream.js";

type Run = { id: string; outcome: string; counts: Record<string, Record<string, number>> };

const pom = (version: string) =>
  `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>lib</artifactId><version>${version}</version></project>\n`;
const tags = (xml: string, tag: string) => [...xml.matchAll(new RegExp(`<${tag}>([^<]+)</${tag}>`, "g"))].map((m) => m[1]);

/**
 * Files whose Maven rows are missing from the index (deployed before the format kept them, a
 * restore that lost them): the path index has each file, its format's rows do not. The walker's
 * backfill has the format record what the deploy would have: its version in the artifact's
 * maven-metadata.xml (where it was deployed, by the file's publish time, not as the newest) and a
 * timestamped file's build in the version's, so Maven resolving through maven-metadata.xml finds it.
 */
describe("maven files whose format rows are missing, after the walker's backfill", () => {
  const lib = "com/example/lib";
  let s: Suite;
  let repo: string;
  let work: string;
  let walks: Awaited<ReturnType<typeof adminCaller>>["call"];
  let db: pg.Client;
  const key = () => s.bootstrapKey;

  beforeAll(async () => {
    [s] = await Promise.all([startSuite(), ensureMaven()]);
    work = mkdtempSync(join(inject("dataDir"), "maven-backfill-"));
    walks = (await adminCaller(s, "/api/walks", "walker")).call;
    repo = freshName("mvn");
    await s.createRepository(repo, "maven");
    db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
  }, 900_000);
  afterAll(async () => {
    await db?.end();
    await s?.stop();
  });

  const put = async (path: string, body: string | Buffer) => expect((await s.call("PUT", `/repository/${repo}/${path}`, { key: key(), body })).status).toBe(201);
  const metadata = async (dir: string) => {
    const r = await s.call("GET", `/repository/${repo}/${dir}/maven-metadata.xml`, { key: key() });
    return { status: r.status, text: await r.text() };
  };

  it("a release and a SNAPSHOT build whose rows are missing appear in maven-metadata.xml, and mvn resolves the SNAPSHOT to the backfilled build", async () => {
    // 1.0 deployed first, 1.1 since; then 1.0's version row is lost.
    await put(`${lib}/1.0/lib-1.0.jar`, randomBytes(64));
    await put(`${lib}/1.0/lib-1.0.pom`, pom("1.0"));
    await put(`${lib}/1.1/lib-1.1.jar`, randomBytes(64));
    await put(`${lib}/1.1/lib-1.1.pom`, pom("1.1"));
    // A SNAPSHOT's two builds deployed; then the second build's rows are lost.
    await put(`${lib}/2.0-SNAPSHOT/lib-2.0-20240101.120000-1.jar`, randomBytes(64));
    await put(`${lib}/2.0-SNAPSHOT/lib-2.0-20240101.120000-1.pom`, pom("2.0-SNAPSHOT"));
    const build2 = randomBytes(64);
    await put(`${lib}/2.0-SNAPSHOT/lib-2.0-20240102.120000-2.jar`, build2);
    await put(`${lib}/2.0-SNAPSHOT/lib-2.0-20240102.120000-2.pom`, pom("2.0-SNAPSHOT"));
    await db.query(`delete from artifacts.maven_versions where repository = $1 and version = '1.0'`, [repo]);
    await db.query(`delete from artifacts.maven_snapshots where repository = $1 and value = '2.0-20240102.120000-2'`, [repo]);
    expect(tags((await metadata(lib)).text, "version")).toEqual(["1.1", "2.0-SNAPSHOT"]);
    expect(tags((await metadata(`${lib}/2.0-SNAPSHOT`)).text, "buildNumber")).toEqual(["1"]);
    // Deploying the release again is no way out: its file is there (a release is deployed once).
    expect((await s.call("PUT", `/repository/${repo}/${lib}/1.0/lib-1.0.jar`, { key: key(), body: randomBytes(64) })).status).toBe(409);

    const res = await walks("POST", "/api/walks/run");
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as Run;
    const done = await eventually(`walk run ${id} to end`, async () => ((await (await walks("GET", "/api/walks/rebuild/runs")).json()) as Run[]).find((r) => r.id === id && r.outcome !== "running"), 120_000);
    expect(done.outcome).toBe("succeeded");
    // 1.0's first file restores its version (its POM then finds it there); build 2's jar and POM each their build.
    expect(done.counts.backfill).toMatchObject({ filled: 3 });

    // 1.0 is listed where it was deployed: 1.1 stays the release.
    const artifact = (await metadata(lib)).text;
    expect(tags(artifact, "version")).toEqual(["1.0", "1.1", "2.0-SNAPSHOT"]);
    expect(tags(artifact, "release")).toEqual(["1.1"]);
    expect(tags(artifact, "latest")).toEqual(["2.0-SNAPSHOT"]);
    const version = (await metadata(`${lib}/2.0-SNAPSHOT`)).text;
    expect(tags(version, "timestamp")).toEqual(["20240102.120000"]);
    expect(tags(version, "buildNumber")).toEqual(["2"]);
    expect(tags(version, "value")).toEqual(["2.0-20240102.120000-2", "2.0-20240102.120000-2"]);

    // The real client: -SNAPSHOT resolves, through the version's maven-metadata.xml, to the backfilled build.
    const m = mavenScratch(join(work, "resolve"), { id: "svc", repository: repo, key: key() });
    const url = `${s.gatewayUrl}/repository/${repo}`;
    const r = await mvn(m, ["dependency:get", `-DremoteRepositories=svc::default::${url}`, "-Dartifact=com.example:lib:2.0-SNAPSHOT", "-Dtransitive=false"], m.dir);
    if (r.code !== 0) throw new Error(`mvn exit ${r.code}:\n${r.output.slice(-4000)}`);
    expect(readFileSync(join(m.local, lib, "2.0-SNAPSHOT", "lib-2.0-SNAPSHOT.jar"))).toEqual(build2);
  });
});
