import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk, run, scratchEnv, startNpmSuite, type Clients } from "./npm-clients.js";
import type { Suite } from "./suite.js";

/**
 * The configurations docs/integration/npm.md gives for each client, exactly as written there:
 * the key kept out of the files, in the environment variable NPM_TOKEN. Each client installs a
 * package with its documented configuration, and the one configuration the page warns about
 * (pnpm with the token line in the project's .npmrc) fails as the page says.
 */
describe("the npm integration page's configurations, with the real clients", () => {
  let s: Suite;
  let clients: Clients;
  let work: string;
  let registry: string;
  let reader: string;
  let n = 0;

  beforeAll(async () => {
    let deployer: string;
    ({ suite: s, clients, work, registry, deployer, reader } = await startNpmSuite("npm-config-"));
    const pkg = join(work, "pkg");
    mkdirSync(pkg);
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@acme/configured", version: "1.0.0", main: "index.js", license: "MIT" }));
    writeFileSync(join(pkg, "index.js"), 'module.exports = "configured";\n');
    const c = project({ userNpmrc: npmrcLines(deployer) });
    expectOk(await run(clients.npm, ["publish"], { cwd: pkg, env: c.env }));
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** The lines of the page's .npmrc: the registry and `//<host>/<path>:_authToken=<token>`. */
  const npmrcLines = (token: string, extra: string[] = []) => [`registry=${registry}`, `${registry.replace(/^https?:/, "")}:_authToken=${token}`, ...extra].join("\n") + "\n";

  /**
   * A clean consumer project depending on the package, with a project .npmrc and a user-level
   * npmrc (at NPM_CONFIG_USERCONFIG) as given, and NPM_TOKEN holding the reader's key.
   */
  const project = (files: { projectNpmrc?: string; userNpmrc?: string; yarnrc?: string }) => {
    const dir = join(work, `run-${++n}`);
    const proj = join(dir, "project");
    mkdirSync(proj, { recursive: true });
    writeFileSync(join(proj, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, dependencies: { "@acme/configured": "1.0.0" } }));
    if (files.projectNpmrc !== undefined) writeFileSync(join(proj, ".npmrc"), files.projectNpmrc);
    if (files.yarnrc !== undefined) writeFileSync(join(proj, ".yarnrc.yml"), files.yarnrc);
    writeFileSync(join(dir, "npmrc"), files.userNpmrc ?? "");
    // scratchEnv sets npm_config_userconfig; the page tells users NPM_CONFIG_USERCONFIG (or ~/.npmrc).
    const { npm_config_userconfig: _, ...env } = scratchEnv(dir, { NPM_TOKEN: reader });
    return { dir, project: proj, env: { ...env, NPM_CONFIG_USERCONFIG: join(dir, "npmrc") } };
  };
  type Project = ReturnType<typeof project>;

  const installed = (p: Project) => expect(readFileSync(join(p.project, "node_modules", "@acme", "configured", "index.js"), "utf8")).toContain("configured");
  // --ignore-workspace: the scratch folder lies inside this repository's own pnpm workspace.
  const pnpmInstall = (p: Project) => run(clients.pnpm, ["install", "--ignore-workspace", "--store-dir", join(p.dir, "pnpm-store")], { cwd: p.project, env: p.env });

  it("npm: ${NPM_TOKEN} in the project's .npmrc", async () => {
    const p = project({ projectNpmrc: npmrcLines("${NPM_TOKEN}") });
    expectOk(await run(clients.npm, ["install"], { cwd: p.project, env: p.env }));
    installed(p);
  });

  it("pnpm: ${NPM_TOKEN} in the user-level npmrc (NPM_CONFIG_USERCONFIG), the registry in the project's .npmrc", async () => {
    const p = project({ projectNpmrc: `registry=${registry}\n`, userNpmrc: npmrcLines("${NPM_TOKEN}") });
    expectOk(await pnpmInstall(p));
    installed(p);
  });

  it("pnpm: the token line in the project's .npmrc is not used, as the page warns (401)", async () => {
    const p = project({ projectNpmrc: npmrcLines("${NPM_TOKEN}") });
    const r = await pnpmInstall(p);
    expect(r.code, r.output).not.toBe(0);
    expect(r.output).toMatch(/ERR_PNPM_FETCH_401/);
  });

  it("yarn 1: ${NPM_TOKEN} and always-auth=true in the project's .npmrc", async () => {
    const p = project({ projectNpmrc: npmrcLines("${NPM_TOKEN}", ["always-auth=true"]) });
    expectOk(await run(clients.yarn1, ["install", "--non-interactive"], { cwd: p.project, env: p.env }));
    installed(p);
  });

  it("yarn 4: npmAuthToken \"${NPM_TOKEN}\" in the project's .yarnrc.yml", async () => {
    const host = new URL(registry).hostname;
    const p = project({
      yarnrc: [`npmRegistryServer: "${registry}"`, 'npmAuthToken: "${NPM_TOKEN}"', "npmAlwaysAuth: true", `unsafeHttpWhitelist: ["${host}"]`, "nodeLinker: node-modules", "enableTelemetry: false"].join("\n") + "\n",
    });
    writeFileSync(join(p.project, "yarn.lock"), "");
    expectOk(await run(process.execPath, [clients.yarn4, "install"], { cwd: p.project, env: { ...p.env, YARN_ENABLE_IMMUTABLE_INSTALLS: "false" } }));
    installed(p);
  });
});
