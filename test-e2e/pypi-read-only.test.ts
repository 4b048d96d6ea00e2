import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { run, type Run } from "./npm-clients.js";
import { buildDist, ensurePythonClients, pythonEnv, type PythonClients } from "./pypi-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

/**
 * twine (Debian's, unmodified) against a pypi repository in read-only mode: the suite's
 * artifacts service and gateway restarted with svc.read-only=true refuse the upload with 403,
 * twine prints the server's reason, and the index goes on answering.
 */
describe("pypi in read-only mode", () => {
  let s: Suite;
  let py: PythonClients;
  let work: string;
  let deployer: string;
  let n = 0;

  beforeAll(async () => {
    [s, py] = await Promise.all([startSuite({ env: { SVC_REPOSITORY: "pypi", SVC_REPOSITORY_FORMAT: "pypi", SVC_REPOSITORY_SCOPE_FROM_PATH: "true" } }), ensurePythonClients()]);
    work = mkdtempSync(join(inject("dataDir"), "pypi-read-only-"));
    deployer = (await s.mint({ label: "uploader", grants: [{ scope: "pypi", tokens: ["deploy"] }] })).key;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  const upload = (files: string[]): Promise<Run> => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(dir, { recursive: true });
    const env = { ...pythonEnv(dir), TWINE_REPOSITORY_URL: `${s.gatewayUrl}/repository/pypi/`, TWINE_USERNAME: "__token__", TWINE_PASSWORD: deployer };
    return run(py.twine, ["upload", "--non-interactive", "--disable-progress-bar", ...files], { cwd: dir, env });
  };
  const index = (project: string) => s.call("GET", `/repository/pypi/simple/${project}/`, { headers: { authorization: `Basic ${Buffer.from(`__token__:${deployer}`).toString("base64")}` } });

  it("refuses twine's upload with 403 and twine shows the reason; the index still answers", async () => {
    const before = await buildDist(work, py, { name: "ro-before", version: "1.0" });
    const r = await upload([before.wheel]);
    if (r.code !== 0) throw new Error(`exit ${r.code}:\n${r.output.slice(-3000)}`);

    for (const service of ["gateway", "artifacts"] as const) await s.stopService(service);
    for (const service of ["artifacts", "gateway"] as const) await s.startService(service, { SVC_READ_ONLY: "true" });
    await eventually("the pypi index answering", async () => ((await index("ro-before").catch(() => undefined))?.status === 200 ? true : undefined));

    const after = await buildDist(work, py, { name: "ro-after", version: "1.0" });
    const refused = await upload([after.wheel]);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/403[\s\S]*read-only/);
    expect((await index("ro-after")).status).toBe(404);
    expect((await index("ro-before")).status).toBe(200);
  }, 240_000);
});
