import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { run, scratchEnv, type Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

/**
 * What the first npm work left open, with the machine's npm (11) through the gateway: the
 * tarball URLs under the deployment's public address (svc.ui.public-url), a version number
 * never published twice once unpublished, and read-only mode refusing a publish with npm
 * showing why (the suite's artifacts service and gateway restarted with svc.read-only=true).
 */
const PUBLIC = "https://repo.example.test";

describe("npm: public tarball URLs, unpublished versions, read-only mode", () => {
  let s: Suite;
  let work: string;
  let registry: string;
  let deployer: string;
  let n = 0;

  beforeAll(async () => {
    s = await startSuite({ env: { SVC_REPOSITORY: "npm", SVC_REPOSITORY_FORMAT: "npm", SVC_REPOSITORY_SCOPE_FROM_PATH: "true", SVC_UI_PUBLIC_URL: PUBLIC } });
    work = mkdtempSync(join(inject("dataDir"), "npm-gaps-"));
    registry = `${s.gatewayUrl}/repository/npm/`;
    deployer = (await s.mint({ label: "publisher", grants: [{ scope: "npm", tokens: ["deploy"] }] })).key;
  }, 300_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** Runs npm in a package folder of its own, with scratch configuration naming the registry and the key. */
  const npm = (args: string[], pkg?: { name: string; version: string }): Promise<Run> => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "npmrc"), `registry=${registry}\n${registry.replace(/^https?:/, "")}:_authToken=${deployer}\n`);
    if (pkg) {
      writeFileSync(join(dir, "package.json"), JSON.stringify({ ...pkg, main: "index.js", license: "MIT" }));
      writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(`${pkg.name}@${pkg.version}`)};\n`);
    }
    return run("npm", args, { cwd: dir, env: scratchEnv(dir) });
  };
  const ok = (r: Run) => {
    if (r.code !== 0) throw new Error(`exit ${r.code}:\n${r.output.slice(-3000)}`);
  };

  it("builds dist.tarball from svc.ui.public-url, not from the address the client used", async () => {
    ok(await npm(["publish"], { name: "public-e2e", version: "1.0.0" }));
    const doc = (await (await s.call("GET", "/repository/npm/public-e2e", { key: deployer })).json()) as { versions: Record<string, { dist: { tarball: string } }> };
    expect(doc.versions["1.0.0"]!.dist.tarball).toBe(`${PUBLIC}/repository/npm/public-e2e/-/public-e2e-1.0.0.tgz`);
    const abbreviated = (await (await s.call("GET", "/repository/npm/public-e2e", { key: deployer, headers: { accept: "application/vnd.npm.install-v1+json" } })).json()) as typeof doc;
    expect(abbreviated.versions["1.0.0"]!.dist.tarball).toBe(`${PUBLIC}/repository/npm/public-e2e/-/public-e2e-1.0.0.tgz`);
  });

  it("never publishes an unpublished version again: 409 with npm's JSON error, which npm prints", async () => {
    ok(await npm(["publish"], { name: "tomb-e2e", version: "1.0.0" }));
    ok(await npm(["publish"], { name: "tomb-e2e", version: "1.0.1" }));
    ok(await npm(["unpublish", "tomb-e2e@1.0.1"]));
    const again = await npm(["publish"], { name: "tomb-e2e", version: "1.0.1" });
    expect(again.code).not.toBe(0);
    expect(again.output).toMatch(/409[\s\S]*cannot publish tomb-e2e@1\.0\.1: that version was unpublished, and a version number is never used twice/);
    // A whole package unpublished: none of its versions comes back either; a new version does.
    ok(await npm(["unpublish", "tomb-e2e", "--force"]));
    const old = await npm(["publish"], { name: "tomb-e2e", version: "1.0.0" });
    expect(old.output).toMatch(/cannot publish tomb-e2e@1\.0\.0: that version was unpublished/);
    ok(await npm(["publish"], { name: "tomb-e2e", version: "1.0.2" }));
    const doc = (await (await s.call("GET", "/repository/npm/tomb-e2e", { key: deployer })).json()) as { versions: Record<string, unknown> };
    expect(Object.keys(doc.versions)).toEqual(["1.0.2"]);
  });

  it("in read-only mode refuses npm publish with 403, and npm shows the reason", async () => {
    for (const service of ["gateway", "artifacts"] as const) await s.stopService(service);
    for (const service of ["artifacts", "gateway"] as const) await s.startService(service, { SVC_READ_ONLY: "true" });
    // Back: reads answer again (startService waits for each to be ready; this waits for the gateway's routes).
    await eventually("the npm repository answering", async () => ((await s.call("GET", "/repository/npm/public-e2e", { key: deployer }).catch(() => undefined))?.status === 200 ? true : undefined));
    const refused = await npm(["publish"], { name: "ro-e2e", version: "1.0.0" });
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/403[\s\S]*read-only/);
    expect((await s.call("GET", "/repository/npm/ro-e2e", { key: deployer })).status).toBe(404);
    // Reads go on.
    expect((await s.call("GET", "/repository/npm/public-e2e", { key: deployer })).status).toBe(200);
  }, 180_000);
});
