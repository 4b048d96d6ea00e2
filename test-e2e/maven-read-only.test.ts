import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureMaven, jarProject, mavenScratch, mvn } from "./maven-client.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

/**
 * Maven (Debian's, unmodified) against a suite whose artifacts service and gateway were restarted
 * with svc.read-only=true: `mvn deploy` is refused and Maven prints the server's reason, while
 * resolving what was deployed before goes on. Its own file: the restart would slow maven-format.
 */
describe("maven in read-only mode", () => {
  const REPO = "maven";
  const ID = "svc";
  let s: Suite;
  let work: string;
  let url: string;
  let deployer: string;
  let n = 0;

  beforeAll(async () => {
    [s] = await Promise.all([startSuite({ env: { SVC_REPOSITORY: REPO, SVC_REPOSITORY_FORMAT: "maven" } }), ensureMaven()]);
    work = mkdtempSync(join(inject("dataDir"), "maven-read-only-"));
    url = `${s.gatewayUrl}/repository/${REPO}`;
    deployer = (await s.mint({ label: "ci", grants: [{ scope: REPO, tokens: ["deploy"] }] })).key;
  }, 900_000);
  afterAll(async () => {
    await s?.stop();
  });

  const scratch = () => mavenScratch(join(work, `run-${++n}`), { id: ID, repository: REPO, key: deployer });
  const get = (path: string) => s.call("GET", `/repository/${REPO}/${path}`, { key: deployer, headers: { "service-repository-name": REPO } });
  const put = async (path: string, body: string) => {
    const headers = { "service-repository-name": REPO };
    expect((await s.call("PUT", `/repository/${REPO}/${path}`, { key: deployer, body, headers })).status).toBe(201);
    expect((await s.call("PUT", `/repository/${REPO}/${path}.sha1`, { key: deployer, body: createHash("sha1").update(body).digest("hex"), headers })).status).toBe(201);
  };

  it("refuses mvn deploy with 403 and Maven shows the reason; what was deployed before still resolves", async () => {
    const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>kept</artifactId><version>1.0</version></project>\n`;
    await put("com/example/kept/1.0/kept-1.0.jar", "the kept jar");
    await put("com/example/kept/1.0/kept-1.0.pom", POM);

    for (const service of ["gateway", "artifacts"] as const) await s.stopService(service);
    for (const service of ["artifacts", "gateway"] as const) await s.startService(service, { SVC_READ_ONLY: "true" });
    await eventually("the maven repository answering", async () => ((await get("com/example/kept/maven-metadata.xml").catch(() => undefined))?.status === 200 ? true : undefined));

    const refused = await mvn(scratch(), ["deploy"], jarProject(join(work, "refused"), { groupId: "com.example", artifactId: "refused", version: "1.0", url, id: ID }));
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/403 this server is read-only \(svc\.read-only\): writes are refused/);
    expect((await get("com/example/refused/maven-metadata.xml")).status).toBe(404);
    expect((await get("com/example/refused/1.0/refused-1.0.jar")).status).toBe(404);

    const m = scratch();
    const resolved = await mvn(m, ["dependency:get", `-DremoteRepositories=${ID}::default::${url}`, "-Dartifact=com.example:kept:1.0", "-Dtransitive=false"], m.dir);
    if (resolved.code !== 0) throw new Error(`mvn exit ${resolved.code}:\n${resolved.output.slice(-4000)}`);
    expect(readFileSync(join(m.local, "com/example/kept/1.0/kept-1.0.jar"), "utf8")).toBe("the kept jar");
  }, 600_000);
});
