import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportCalls } from "./export-harness.js";
import { freshName as fresh, startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";

const sha1 = (data: string) => createHash("sha1").update(data).digest("hex");

/**
 * Exporting a maven repository: files deployed with plain PUTs as Maven sends them (file, then
 * its .sha1), exported, then read back from the target as Maven would resolve them.
 */
describe("exporting a maven repository into another", () => {
  let s: Suite;
  let admin: string;
  let deployer: string;
  beforeAll(async () => {
    s = await startSuite();
    admin = s.bootstrapKey;
    deployer = (await s.mint({ label: "ci", grants: [{ scope: "*", tokens: ["deploy"] }] })).key;
  });
  afterAll(async () => {
    await s?.stop();
  });

  const deploy = async (repo: string, path: string, body: string) => {
    const r = await s.call("PUT", `/repository/${repo}/${path}`, { key: deployer, body });
    expect(r.status, await r.text()).toBe(201);
    expect((await s.call("PUT", `/repository/${repo}/${path}.sha1`, { key: deployer, body: sha1(body) })).status).toBe(201);
  };
  const get = async (repo: string, path: string) => {
    const r = await s.call("GET", `/repository/${repo}/${path}`, { key: deployer });
    return { status: r.status, text: await r.text() };
  };
  const { exportAndWait } = exportCalls(() => s, () => admin);

  const G = "com/example/lib";
  const JAR = `${G}/1.0/lib-1.0.jar`;
  const POM = `${G}/1.0/lib-1.0.pom`;
  const SNAP1 = `${G}/2.0-SNAPSHOT/lib-2.0-20240102.030405-1.jar`;
  const SNAP2 = `${G}/2.0-SNAPSHOT/lib-2.0-20240103.040506-2.jar`;

  it("deploys each file into the target, so its maven-metadata.xml lists the versions and snapshot builds; skips them on a second run", async () => {
    const source = fresh("mvn-src");
    const target = fresh("mvn-dst");
    await s.createRepository(source, "maven");
    await s.createRepository(target, "maven");
    await deploy(source, JAR, "jar 1.0");
    await deploy(source, POM, "<project><artifactId>lib</artifactId><version>1.0</version></project>");
    await deploy(source, SNAP1, "snapshot build 1");
    await deploy(source, SNAP2, "snapshot build 2");
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === target && e.kind === "artifact.published");
    try {
      const r = await exportAndWait(source, target);
      expect(r).toMatchObject({ state: "done", format: "maven", total: 4, copied: 4, skipped: 0, refused: 0 });

      const meta = await get(target, `${G}/maven-metadata.xml`);
      expect(meta.status).toBe(200);
      expect(meta.text).toContain("<version>1.0</version>");
      expect(meta.text).toContain("<version>2.0-SNAPSHOT</version>");
      expect(meta.text).toContain("<release>1.0</release>");
      const snapMeta = await get(target, `${G}/2.0-SNAPSHOT/maven-metadata.xml`);
      expect(snapMeta.status).toBe(200);
      expect(snapMeta.text).toContain("<timestamp>20240103.040506</timestamp>");
      expect(snapMeta.text).toContain("<buildNumber>2</buildNumber>");
      expect(snapMeta.text).toContain("<value>2.0-20240103.040506-2</value>");
      expect((await get(target, `${G}/maven-metadata.xml.sha1`)).text).toBe(sha1(meta.text));
      expect((await get(target, JAR)).text).toBe("jar 1.0");
      expect((await get(target, `${JAR}.sha1`)).text).toBe(sha1("jar 1.0"));
      expect((await get(target, SNAP2)).text).toBe("snapshot build 2");
      const got = await events.until("the jar's event", (es) => es.some((e) => e.path === JAR));
      expect(got.find((e) => e.path === JAR)?.package).toEqual({ format: "maven", name: "com.example:lib", version: "1.0", file: "lib-1.0.jar" });

      expect(await exportAndWait(source, target)).toMatchObject({ state: "done", copied: 0, skipped: 4, refused: 0 });
    } finally {
      await events.close();
    }
  });

  it("refuses a release the target holds already as another build, and a snapshot file holding other content; completes a release the target holds part of", async () => {
    const source = fresh("mvn-src");
    const target = fresh("mvn-dst");
    await s.createRepository(source, "maven");
    await s.createRepository(target, "maven");
    await deploy(source, JAR, "jar 1.0");
    await deploy(source, POM, "pom 1.0");
    await deploy(source, `${G}/1.1/lib-1.1.jar`, "jar 1.1");
    await deploy(source, `${G}/1.1/lib-1.1.pom`, "pom 1.1");
    await deploy(source, SNAP1, "snapshot build 1");
    // The target's 1.0 is another build (its POM differs); its 1.1 is the source's, half there.
    await deploy(target, POM, "another pom 1.0");
    await deploy(target, `${G}/1.1/lib-1.1.pom`, "pom 1.1");
    await deploy(target, SNAP1, "another snapshot build 1");
    const r = await exportAndWait(source, target);
    expect(r).toMatchObject({ state: "done", copied: 1, skipped: 1, refused: 3 });
    expect(r.refusals).toEqual([
      { path: JAR, reason: `${target} holds release com.example:lib:1.0 already, with lib-1.0.pom different from ${source}'s: a release is deployed once` },
      { path: POM, reason: `${target} holds release com.example:lib:1.0 already, with lib-1.0.pom different from ${source}'s: a release is deployed once` },
      { path: SNAP1, reason: expect.stringMatching(/target holds different content at this path.*not overwritten/) },
    ]);
    expect((await get(target, JAR)).status).toBe(404);
    expect((await get(target, POM)).text).toBe("another pom 1.0");
    expect((await get(target, `${G}/1.1/lib-1.1.jar`)).text).toBe("jar 1.1");
    expect((await get(target, SNAP1)).text).toBe("another snapshot build 1");
    const meta = await get(target, `${G}/maven-metadata.xml`);
    expect(meta.text).toContain("<release>1.1</release>");
  });
});
