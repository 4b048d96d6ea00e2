import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureClients, run, scratchEnv, type Clients, type Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";

/**
 * npm, pnpm, yarn 1 and yarn 4, unmodified, against an npm repository through the gateway with
 * minted keys. The repository is the one created at first start (svc.repository-format=npm),
 * and keys are granted that repository only: the clients cannot send Service-Repository-Name,
 * so svc.repository-scope-from-path is on.
 */
describe("npm repositories with the real clients", () => {
  let s: Suite;
  let clients: Clients;
  let work: string;
  let registry: string;
  let deployer: string;
  let reader: string;
  let n = 0;

  beforeAll(async () => {
    [s, clients] = await Promise.all([
      startSuite({ env: { SVC_REPOSITORY: "npm", SVC_REPOSITORY_FORMAT: "npm", SVC_REPOSITORY_SCOPE_FROM_PATH: "true" } }),
      ensureClients(),
    ]);
    work = mkdtempSync(join(inject("dataDir"), "npm-clients-"));
    registry = `${s.gatewayUrl}/repository/npm/`;
    deployer = (await s.mint({ label: "publisher", grants: [{ scope: "npm", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "reader", grants: [{ scope: "npm", tokens: ["read-only"] }] })).key;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** A fresh folder with an .npmrc naming the registry and (when given) the key as `_authToken`. */
  const scratch = (key?: string) => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(join(dir, "project"), { recursive: true });
    const host = registry.replace(/^https?:/, "");
    const npmrc = [`registry=${registry}`, ...(key ? [`${host}:_authToken=${key}`, "always-auth=true"] : [])].join("\n");
    writeFileSync(join(dir, "npmrc"), `${npmrc}\n`);
    writeFileSync(join(dir, "project", ".npmrc"), `${npmrc}\n`);
    return { dir, project: join(dir, "project"), env: scratchEnv(dir) };
  };

  /** A package folder ready to publish. */
  const pkg = (name: string, version: string, extra: object = {}) => {
    const dir = join(work, `pkg-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version, main: "index.js", license: "MIT", ...extra }));
    writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(`${name}@${version}`)};\n`);
    return dir;
  };

  const npm = (args: string[], where: { cwd: string; env: Record<string, string> }): Promise<Run> => run(clients.npm, args, where);
  const publish = async (dir: string, key: string, args: string[] = []) => npm(["publish", ...args], { cwd: dir, env: scratch(key).env });

  const expectOk = (r: Run) => {
    if (r.code !== 0) throw new Error(`exit ${r.code}:\n${r.output.slice(-3000)}`);
  };

  it("npm publishes a package and a scoped package, and npm installs both in a clean project", async () => {
    expectOk(await publish(pkg("left-pad-e2e", "1.0.0"), deployer));
    expectOk(await publish(pkg("@acme/util", "1.0.0"), deployer));
    const c = scratch(reader);
    writeFileSync(join(c.project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    expectOk(await npm(["install", "left-pad-e2e@1.0.0", "@acme/util"], { cwd: c.project, env: c.env }));
    expect(readFileSync(join(c.project, "node_modules", "left-pad-e2e", "index.js"), "utf8")).toContain("left-pad-e2e@1.0.0");
    expect(readFileSync(join(c.project, "node_modules", "@acme", "util", "index.js"), "utf8")).toContain("@acme/util@1.0.0");
    const lock = JSON.parse(readFileSync(join(c.project, "package-lock.json"), "utf8")) as { packages: Record<string, { resolved: string }> };
    expect(lock.packages["node_modules/@acme/util"]!.resolved).toBe(`${registry}@acme/util/-/util-1.0.0.tgz`);
  });
});
