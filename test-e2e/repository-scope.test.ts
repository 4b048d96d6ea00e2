import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { ensureClients, expectOk, run, scratchEnv, type Clients } from "./npm-clients.js";
import { buildDist, ensurePythonClients, pythonRuns, type PythonClients } from "./pypi-clients.js";
import { twoGateways } from "./two-gateways.js";

/**
 * A repository's own scopeFromPath (PATCH /api/repositories/<name> {"scopeFromPath"}), with the
 * deployment-wide svc.repository-scope-from-path left off: a key granted on that repository
 * alone works with the real npm and twine/pip clients, which cannot send Service-Repository-Name,
 * once it is on, and is refused (403, as the client shows it) while it is off. Two gateways, no
 * restart: a switch made through one holds on the other at once.
 */
describe("keys granted on one repository, authorised by the repository's path", () => {
  const ctx = twoGateways();
  let clients: Clients;
  let py: PythonClients;
  let work: string;
  let n = 0;

  beforeAll(async () => {
    [clients, py] = await Promise.all([ensureClients(), ensurePythonClients()]);
    work = mkdtempSync(join(inject("dataDir"), "repository-scope-"));
  }, 600_000);

  const admin = (method: string, path: string, body?: object) => ctx.s.call(method, path, { key: ctx.s.bootstrapKey, ...(body ? { body } : {}) });
  const setScope = async (name: string, on: boolean) => {
    const res = await admin("PATCH", `/api/repositories/${name}`, { scopeFromPath: on });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { scopeFromPath: boolean }).scopeFromPath).toBe(on);
  };

  /** npm with an .npmrc naming `registry` and the key as its token, in a fresh folder. */
  const npm = (registry: string, key: string, args: string[], cwd?: string) => {
    const dir = join(work, `npm-${++n}`);
    mkdirSync(join(dir, "project"), { recursive: true });
    const npmrc = `registry=${registry}\n${registry.replace(/^https?:/, "")}:_authToken=${key}\n`;
    writeFileSync(join(dir, "npmrc"), npmrc);
    writeFileSync(join(dir, "project", ".npmrc"), npmrc);
    writeFileSync(join(dir, "project", "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    return { project: join(dir, "project"), result: run(clients.npm, args, { cwd: cwd ?? join(dir, "project"), env: scratchEnv(dir) }) };
  };
  const pkg = (name: string, version: string) => {
    const dir = join(work, `pkg-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version, main: "index.js", license: "MIT" }));
    writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(`${name}@${version}`)};\n`);
    return dir;
  };

  it("npm: refused with 403 while the repository's scopeFromPath is off, publishes and installs once it is on, on either gateway", async () => {
    const { s, b } = ctx;
    const created = await admin("POST", "/api/repositories", { name: "team-npm", format: "npm" });
    expect(created.status).toBe(201);
    expect(((await created.json()) as { scopeFromPath: boolean }).scopeFromPath).toBe(false);
    const deployer = (await s.mint({ label: "team-npm deployer", grants: [{ scope: "team-npm", tokens: ["deploy"] }] })).key;
    const reader = (await s.mint({ label: "team-npm reader", grants: [{ scope: "team-npm", tokens: ["read-only"] }] })).key;
    const onA = `${s.gatewayUrl}/repository/team-npm/`;
    const onB = `${b.url}/repository/team-npm/`;

    // Off (the spec's rule): npm sends no Service-Repository-Name, so the request is authorised against *.
    const refused = await npm(onA, deployer, ["publish"], pkg("scoped-key-e2e", "1.0.0")).result;
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain("403");
    expect(refused.output).toContain("scopeFromPath");

    // On, through gateway A: npm publishes through A and installs through B, no restart.
    await setScope("team-npm", true);
    expectOk(await npm(onA, deployer, ["publish"], pkg("scoped-key-e2e", "1.0.0")).result);
    const install = npm(onB, reader, ["install", "scoped-key-e2e@1.0.0"]);
    expectOk(await install.result);
    expect(readFileSync(join(install.project, "node_modules", "scoped-key-e2e", "index.js"), "utf8")).toContain("scoped-key-e2e@1.0.0");
    const listed = (await (await admin("GET", "/api/repositories")).json()) as { name: string; scopeFromPath: boolean }[];
    expect(listed.find((r) => r.name === "team-npm")?.scopeFromPath).toBe(true);

    // Off again, switched through A: B refuses at once.
    await setScope("team-npm", false);
    const again = await npm(onB, reader, ["view", "scoped-key-e2e", "version"]).result;
    expect(again.code).not.toBe(0);
    expect(again.output).toContain("403");
  });

  it("the option lends nothing: a header naming another repository is still refused, and a key granted elsewhere still cannot read", async () => {
    const { s, b } = ctx;
    await setScope("team-npm", true);
    const reader = (await s.mint({ grants: [{ scope: "team-npm", tokens: ["read-only"] }] })).key;
    const other = (await s.mint({ grants: [{ scope: "default", tokens: ["read-only"] }] })).key;
    const packument = (key: string, headers: Record<string, string> = {}) => fetch(`${b.url}/repository/team-npm/scoped-key-e2e`, { headers: { authorization: `Bearer ${key}`, ...headers } });
    expect((await packument(reader)).status).toBe(200);
    expect((await packument(reader, { "service-repository-name": "default" })).status).toBe(403);
    expect((await packument(reader, { "service-repository-name": "team-npm" })).status).toBe(200);
    const elsewhere = await packument(other);
    expect(elsewhere.status).toBe(403);
    // The refusal of a key without the right names no remedy that would widen a grant.
    expect(await elsewhere.text()).not.toMatch(/grant on \*|\* grant/);
  });

  it("twine and pip: a repository created with scopeFromPath takes a key granted on it alone, until it is switched off", async () => {
    const { s, b } = ctx;
    const created = await admin("POST", "/api/repositories", { name: "team-py", format: "pypi", scopeFromPath: true });
    expect(created.status).toBe(201);
    expect(((await created.json()) as { scopeFromPath: boolean }).scopeFromPath).toBe(true);
    const deployer = (await s.mint({ grants: [{ scope: "team-py", tokens: ["deploy"] }] })).key;
    const reader = (await s.mint({ grants: [{ scope: "team-py", tokens: ["read-only"] }] })).key;
    const runs = pythonRuns(work, py);
    const dist = await buildDist(work, py, { name: "scoped-key-py", version: "1.0.0" });

    // Uploaded through B, installed through A.
    runs.expectOk(await runs.twine(`${b.url}/repository/team-py/`, [dist.wheel], deployer));
    const index = new URL(`${s.gatewayUrl}/repository/team-py/simple/`);
    index.username = "__token__";
    index.password = reader;
    const installed = await runs.pipInstall(index.toString(), ["scoped-key-py==1.0.0"]);
    runs.expectOk(installed.r);
    expect((await installed.imported("scoped_key_py")).output).toContain("scoped-key-py@1.0.0");

    // Switched off through A: twine through B is refused, as twine shows it.
    await setScope("team-py", false);
    const later = await buildDist(work, py, { name: "scoped-key-py", version: "1.0.1" });
    const refused = await runs.twine(`${b.url}/repository/team-py/`, [later.wheel], deployer);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain("403");
  });
});
