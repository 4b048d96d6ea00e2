import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureMaven, mavenScratch, mvn } from "./maven-client.js";
import { freshName, startSuite, type Suite } from "./suite.js";
import { adminCaller, eventually } from "./upstream.js";

type Run = { id: string; outcome: string; counts: Record<string, Record<string, number>> };

const pom = (version: string) =>
  `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>lib</artifactId><version>${version}</version></project>\n`;
const tags = (xml: string, tag: string) => [...xml.matchAll(new RegExp(`<${tag}>([^<]+)</${tag}>`, "g"))].map((m) => m[1]);

/**
 * A deploy that crashed after its file was renamed into the store and before its commit leaves a
 * file no index knows. The walker's backfill indexes it and, in the same transaction, records
 * what the deploy would have: its version in the artifact's maven-metadata.xml (where it was
 * deployed, by the file's time, not as the newest) and a timestamped file's build in the
 * version's, so Maven resolving through maven-metadata.xml finds it.
 */
describe("maven files a crashed deploy left in the store, after the walker's backfill", () => {
  const lib = "com/example/lib";
  let s: Suite;
  let repo: string;
  let work: string;
  let walks: Awaited<ReturnType<typeof adminCaller>>["call"];
  const key = () => s.bootstrapKey;

  beforeAll(async () => {
    [s] = await Promise.all([startSuite(), ensureMaven()]);
    work = mkdtempSync(join(inject("dataDir"), "maven-backfill-"));
    walks = (await adminCaller(s, "/api/walks", "walker")).call;
    repo = freshName("mvn");
    await s.createRepository(repo, "maven");
  }, 900_000);
  afterAll(async () => {
    await s?.stop();
  });

  const put = async (path: string, body: string | Buffer) => expect((await s.call("PUT", `/repository/${repo}/${path}`, { key: key(), body })).status).toBe(201);
  /** What a crashed deploy leaves: the file in place in the store, nothing in the index, dated when it landed. */
  const crashed = (path: string, body: string | Buffer, at = new Date()) => {
    const file = join(s.storeRoot, "repositories", repo, ...path.split("/"));
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(file, body);
    utimesSync(file, at, at);
  };
  const metadata = async (dir: string) => {
    const r = await s.call("GET", `/repository/${repo}/${dir}/maven-metadata.xml`, { key: key() });
    return { status: r.status, text: await r.text() };
  };

  it("a release and a SNAPSHOT build whose deploys crashed appear in maven-metadata.xml, and mvn resolves the SNAPSHOT to the backfilled build", async () => {
    // 1.0's deploy crashed an hour ago; 1.1 was deployed since.
    const hourAgo = new Date(Date.now() - 3_600_000);
    crashed(`${lib}/1.0/lib-1.0.jar`, randomBytes(64), hourAgo);
    crashed(`${lib}/1.0/lib-1.0.pom`, pom("1.0"), hourAgo);
    await put(`${lib}/1.1/lib-1.1.jar`, randomBytes(64));
    await put(`${lib}/1.1/lib-1.1.pom`, pom("1.1"));
    // A SNAPSHOT's first build deployed, its second build's deploy crashed.
    await put(`${lib}/2.0-SNAPSHOT/lib-2.0-20240101.120000-1.jar`, randomBytes(64));
    await put(`${lib}/2.0-SNAPSHOT/lib-2.0-20240101.120000-1.pom`, pom("2.0-SNAPSHOT"));
    const build2 = randomBytes(64);
    crashed(`${lib}/2.0-SNAPSHOT/lib-2.0-20240102.120000-2.jar`, build2);
    crashed(`${lib}/2.0-SNAPSHOT/lib-2.0-20240102.120000-2.pom`, pom("2.0-SNAPSHOT"));
    expect(tags((await metadata(lib)).text, "version")).toEqual(["1.1", "2.0-SNAPSHOT"]);
    expect(tags((await metadata(`${lib}/2.0-SNAPSHOT`)).text, "buildNumber")).toEqual(["1"]);
    // Deploying the release again is no way out: its file is there.
    expect((await s.call("PUT", `/repository/${repo}/${lib}/1.0/lib-1.0.jar`, { key: key(), body: randomBytes(64) })).status).toBe(409);

    const res = await walks("POST", "/api/walks/run");
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as Run;
    const done = await eventually(`walk run ${id} to end`, async () => ((await (await walks("GET", "/api/walks/rebuild/runs")).json()) as Run[]).find((r) => r.id === id && r.outcome !== "running"), 120_000);
    expect(done.outcome).toBe("succeeded");
    expect(done.counts.backfill).toMatchObject({ filled: 4 });

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
