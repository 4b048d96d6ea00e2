import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { zipSync, strToU8 } from "fflate";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createHash } from "node:crypto";
import { expectOk, run, scratchEnv, startNpmSuite, type Clients, type Run } from "./npm-clients.js";
import { buildDist, ensurePythonClients, pythonEnv, uploadForm } from "./pypi-clients.js";
import type { Suite } from "./suite.js";
import { keyId } from "@svc/keys";

/**
 * The screening gate with the real npm client: advisory data in the OSV format made here (a
 * folder of records and a zip), loaded at start and refreshed every few seconds; malware
 * refused (svc.malware-action=BLOCK, fixed at start), a critical vulnerability held and the deny
 * list warning (svc.vulnerability-action=HOLD, svc.deny-list-action=WARN, both set at run time
 * through PUT /api/settings); held versions hidden from the packument, so
 * npm installs the newest allowed one; and new advisory data holding a version already stored.
 */
describe("the screening gate", () => {
  let s: Suite;
  let clients: Clients;
  let work: string;
  let registry: string;
  let deployer: string;
  let reader: string;
  let advisories: string;
  let admin: string;
  let n = 0;

  const osv = (id: string, name: string, affected: object, extra: object = {}) => ({ schema_version: "1.6.0", id, modified: "2026-01-01T00:00:00Z", summary: `${id} about ${name}`, affected: [{ package: { ecosystem: "npm", name }, ...affected }], ...extra });

  beforeAll(async () => {
    advisories = mkdtempSync(join(inject("dataDir"), "gate-osv-"));
    const records = join(advisories, "records");
    mkdirSync(records);
    writeFileSync(join(records, "MAL-2026-0001.json"), JSON.stringify(osv("MAL-2026-0001", "gate-pkg", { versions: ["1.0.1"] })));
    // A critical vulnerability (its CVSS vector), in a zip as osv.dev exports them.
    const critical = osv("GHSA-gate-crit-0001", "gate-pkg", { ranges: [{ type: "SEMVER", events: [{ introduced: "1.0.2" }, { fixed: "1.0.3" }] }] }, { severity: [{ type: "CVSS_V3", score: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H" }] });
    // A low one, under the threshold (HIGH): nothing happens.
    const low = osv("GHSA-gate-low-0001", "gate-pkg", { ranges: [{ type: "SEMVER", events: [{ introduced: "0" }] }] }, { database_specific: { severity: "LOW" } });
    writeFileSync(join(advisories, "npm-all.zip"), zipSync({ "GHSA-gate-crit-0001.json": strToU8(JSON.stringify(critical)), "GHSA-gate-low-0001.json": strToU8(JSON.stringify(low)) }));
    ({ suite: s, clients, work, registry, deployer, reader } = await startNpmSuite("gate-", {
      SVC_ADVISORIES_SOURCES: `${advisories},${join(advisories, "missing")}`,
      SVC_ADVISORIES_REFRESH: "2s",
      SVC_MALWARE_ACTION: "BLOCK",
      SVC_VULNERABILITY_THRESHOLD: "HIGH",
    }));
    admin = s.bootstrapKey;
    // Changed at run time, as an administrator would: the artifacts service follows.
    for (const [name, value] of [["vulnerability-action", "HOLD"], ["deny-list-action", "WARN"]]) {
      const res = await s.call("PUT", `/api/settings/${name}`, { key: admin, body: { value } });
      if (res.status !== 200) throw new Error(`PUT /api/settings/${name} answered ${res.status}: ${await res.text()}`);
    }
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  const scratch = (key: string) => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(join(dir, "project"), { recursive: true });
    const host = registry.replace(/^https?:/, "");
    writeFileSync(join(dir, "npmrc"), `registry=${registry}\n${host}:_authToken=${key}\nalways-auth=true\n`);
    return { dir, project: join(dir, "project"), env: scratchEnv(dir) };
  };
  const npm = (args: string[], where: { cwd: string; env: Record<string, string> }): Promise<Run> => run(clients.npm, args, where);
  const publish = (name: string, version: string, args: string[] = []) => {
    const dir = join(work, `pkg-${++n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version, main: "index.js", license: "MIT" }));
    writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(`${name}@${version}`)};\n`);
    return npm(["publish", ...args], { cwd: dir, env: scratch(deployer).env });
  };
  /** npm installs `spec` in a clean project; answers the version it installed. */
  const install = async (spec: string) => {
    const c = scratch(reader);
    writeFileSync(join(c.project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    expectOk(await npm(["install", "--no-package-lock", spec], { cwd: c.project, env: c.env }));
    return (JSON.parse(readFileSync(join(c.project, "node_modules", "gate-pkg", "package.json"), "utf8")) as { version: string }).version;
  };
  const json = async <T>(res: Response): Promise<T> => {
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as T;
  };
  const until = async <T>(what: () => Promise<T | undefined>, ms = 60_000): Promise<T> => {
    for (const end = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 300))) {
      const got = await what();
      if (got !== undefined) return got;
      if (Date.now() > end) throw new Error("timed out waiting");
    }
  };
  type Held = { id: string; path: string; reason: string };

  it("loads the OSV data at start and reports each source; one that cannot be read is failed, the others loaded", async () => {
    const status = await until(async () => {
      const st = await json<{ sources: { source: string; state: string; records: number; error: string | null }[]; ageSeconds: number | null; failed: number }>(await s.call("GET", "/api/advisories/status", { key: admin }));
      return st.sources.every((x) => x.state !== "pending") ? st : undefined;
    });
    expect(status.sources[0]).toMatchObject({ source: advisories, state: "loaded", records: 3 });
    expect(status.sources[1]).toMatchObject({ state: "failed", error: expect.stringContaining("ENOENT") });
    expect(status.failed).toBe(1);
    expect(status.ageSeconds).not.toBeNull();
    // The posture says so, naming the artifacts node.
    await until(async () => {
      const p = await json<{ advisories: { name: string; nodes?: string[] }[] }>(await s.call("GET", "/api/posture", { key: admin }));
      return p.advisories.find((a) => a.name === "svc.advisories.unreadable" && a.nodes?.some((n) => n.startsWith("artifacts@")));
    });
  });

  it("npm publish of a malware version is refused with the reason and stores nothing; a clean one is stored", async () => {
    expectOk(await publish("gate-pkg", "1.0.0"));
    const refused = await publish("gate-pkg", "1.0.1");
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain("403");
    expect(refused.output).toContain("MAL-2026-0001");
    expect(refused.output).not.toMatch(/reference/i);
    expect((await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.1.tgz", { key: reader })).status).toBe(404);
  });

  it("a vulnerable version is held: not served nor listed, npm installs the newest allowed version; released, it is", async () => {
    expectOk(await publish("gate-pkg", "1.0.2"));
    const held = await json<Held[]>(await s.call("GET", "/api/held?repository=npm", { key: admin }));
    const h = held.find((x) => x.path === "gate-pkg/-/gate-pkg-1.0.2.tgz");
    expect(h?.reason).toContain("GHSA-gate-crit-0001");
    const download = await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.2.tgz", { key: reader });
    expect(download.status).toBe(403);
    expect(await download.text()).toContain("GHSA-gate-crit-0001");
    const doc = await json<{ "dist-tags": Record<string, string>; versions: Record<string, unknown> }>(await s.call("GET", "/repository/npm/gate-pkg", { key: reader }));
    expect(doc["dist-tags"].latest).toBe("1.0.0");
    expect(Object.keys(doc.versions)).toEqual(["1.0.0"]);
    expect(await install("gate-pkg")).toBe("1.0.0");
    // One version's document: the held one is not found, and the tag on it names the repaired latest.
    expect((await s.call("GET", "/repository/npm/gate-pkg/1.0.2", { key: reader })).status).toBe(404);
    expect((await json<{ version: string }>(await s.call("GET", "/repository/npm/gate-pkg/latest", { key: reader }))).version).toBe("1.0.0");

    expect((await s.call("POST", `/api/held/${h!.id}/release`, { key: admin })).status).toBe(204);
    expect((await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.2.tgz", { key: reader })).status).toBe(200);
    expect(await install("gate-pkg@^1.0.0")).toBe("1.0.2");
    expect((await json<Held[]>(await s.call("GET", "/api/held?repository=npm", { key: admin }))).map((x) => x.path)).not.toContain(h!.path);
  });

  it("the deny list: a bad range is refused in the ecosystem's terms; a listed version is stored with a finding (WARN)", async () => {
    const bad = await s.call("POST", "/api/deny-list", { key: admin, body: { ecosystem: "Maven", name: "org.example:lib", versions: "[2.0,1.0]", reason: "x" } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("Maven version range");
    const added = await s.call("POST", "/api/deny-list", { key: admin, body: { ecosystem: "npm", name: "gate-pkg", versions: ">=1.0.3 <1.1.0", reason: "a build from the compromised pipeline" } });
    expect(added.status).toBe(201);
    const entry = (await added.json()) as { id: string };
    expect((await json<{ id: string }[]>(await s.call("GET", "/api/deny-list", { key: admin }))).map((e) => e.id)).toContain(entry.id);
    // Only administrators manage it.
    expect((await s.call("POST", "/api/deny-list", { key: deployer, body: { ecosystem: "npm", name: "x", versions: "*", reason: "x" } })).status).toBe(403);

    expectOk(await publish("gate-pkg", "1.0.3"));
    expect((await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.3.tgz", { key: reader })).status).toBe(200);
    const findings = await json<{ path: string; type: string; action: string; summary: string }[]>(await s.call("GET", "/api/findings?repository=npm", { key: admin }));
    expect(findings).toContainEqual(expect.objectContaining({ path: "gate-pkg/-/gate-pkg-1.0.3.tgz", type: "deny-list", action: "WARN", summary: expect.stringContaining("compromised pipeline") }));
    expect((await s.call("DELETE", `/api/deny-list/${entry.id}`, { key: admin })).status).toBe(204);
    expect((await s.call("DELETE", `/api/deny-list/${entry.id}`, { key: admin })).status).toBe(404);
    expect((await s.call("DELETE", "/api/deny-list/not-an-id", { key: admin })).status).toBe(404);
    for (const list of ["/api/deny-list", "/api/findings", "/api/held"]) expect((await s.call("GET", `${list}?after=bogus`, { key: admin })).status).toBe(400);
  });

  it("new advisory data holds a stored version it names as malware, with a finding saying how often it was downloaded", async () => {
    writeFileSync(join(advisories, "records", "MAL-2026-0002.json"), JSON.stringify(osv("MAL-2026-0002", "gate-pkg", { versions: ["1.0.0"] })));
    const held = await until(async () => (await json<Held[]>(await s.call("GET", "/api/held?repository=npm", { key: admin }))).find((x) => x.path === "gate-pkg/-/gate-pkg-1.0.0.tgz"));
    expect(held.reason).toContain("MAL-2026-0002");
    expect((await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.0.tgz", { key: reader })).status).toBe(403);
    const findings = await json<{ path: string; type: string; advisory: string; downloads: number; dataLoaded: string | null }[]>(await s.call("GET", "/api/findings?repository=npm", { key: admin }));
    const f = findings.find((x) => x.advisory === "MAL-2026-0002");
    expect(f).toMatchObject({ path: "gate-pkg/-/gate-pkg-1.0.0.tgz", type: "malware" });
    expect(f!.downloads).toBeGreaterThanOrEqual(1);
    expect(f!.dataLoaded).not.toBeNull();
    // Discarded: the file and its version are gone.
    expect((await s.call("DELETE", `/api/held/${held.id}`, { key: admin })).status).toBe(204);
    expect((await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.0.tgz", { key: reader })).status).toBe(404);
  });

  it("a deny list entry added later holds the stored version it names (deny-list-action HOLD), its finding names who downloaded it; confirmed or dismissed once", async () => {
    expectOk(await publish("gate-late", "1.0.0"));
    expectOk(await publish("gate-late", "1.1.0"));
    const tarball = "/repository/npm/gate-late/-/gate-late-1.0.0.tgz";
    for (const key of [reader, reader, deployer]) expect((await s.call("GET", tarball, { key })).status).toBe(200);
    expect((await s.call("PUT", "/api/settings/deny-list-action", { key: admin, body: { value: "HOLD" } })).status).toBe(200);
    // Every node applies a change within a second (docs/configuration/README.md); the check below reads it once.
    await new Promise((r) => setTimeout(r, 3000));
    try {
      const added = await s.call("POST", "/api/deny-list", { key: admin, body: { ecosystem: "npm", name: "gate-late", versions: "<1.1.0", reason: "signed with a stolen key" } });
      expect(added.status).toBe(201);
      // Checked after the answer: the stored 1.0.0 is held, 1.1.0 (outside the range) is not.
      const held = await until(async () => (await json<Held[]>(await s.call("GET", "/api/held?repository=npm", { key: admin }))).find((x) => x.path === "gate-late/-/gate-late-1.0.0.tgz"));
      expect(held.reason).toContain("deny list");
      expect(held.reason).toContain("stolen key");
      expect((await s.call("GET", tarball, { key: reader })).status).toBe(403);
      expect((await s.call("GET", "/repository/npm/gate-late/-/gate-late-1.1.0.tgz", { key: reader })).status).toBe(200);

      type Found = { id: string; path: string; type: string; action: string; status: string; triagedBy: string | null; note: string | null; downloaders: number; downloadedBy: { principal: string; downloads: number }[] };
      // The downloads are written in batches (every 2 s): the finding names both keys once they are.
      const f = await until(async () => {
        const list = await json<Found[]>(await s.call("GET", "/api/findings?repository=npm&status=open", { key: admin }));
        const x = list.find((y) => y.path === "gate-late/-/gate-late-1.0.0.tgz");
        return x && x.downloaders === 2 ? x : undefined;
      });
      expect(f).toMatchObject({ type: "deny-list", action: "HOLD", status: "open" });
      expect(f.downloadedBy).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ principal: `key:${keyId(reader)}`, downloads: 2 }),
          expect.objectContaining({ principal: `key:${keyId(deployer)}`, downloads: 1 }),
        ]),
      );
      // Only administrators triage; a finding is triaged once.
      expect((await s.call("POST", `/api/findings/${f.id}/dismiss`, { key: deployer, body: {} })).status).toBe(403);
      const dismissed = await s.call("POST", `/api/findings/${f.id}/dismiss`, { key: admin, body: { note: "the key was rotated before any build used it" } });
      expect(dismissed.status).toBe(200);
      expect(await dismissed.json()).toMatchObject({ status: "dismissed", triagedBy: expect.stringContaining(keyId(admin)), note: "the key was rotated before any build used it" });
      const again = await s.call("POST", `/api/findings/${f.id}/confirm`, { key: admin, body: {} });
      expect(again.status).toBe(409);
      expect(await again.text()).toContain("already dismissed");
      expect((await json<Found[]>(await s.call("GET", "/api/findings?repository=npm&status=open", { key: admin }))).map((x) => x.id)).not.toContain(f.id);
      expect((await json<Found[]>(await s.call("GET", "/api/findings?repository=npm&status=dismissed", { key: admin }))).map((x) => x.id)).toContain(f.id);
      expect((await s.call("GET", "/api/findings?status=maybe", { key: admin })).status).toBe(400);
      expect((await s.call("POST", "/api/findings/not-an-id/confirm", { key: admin, body: {} })).status).toBe(404);

      // Confirming a finding of a file served (the WARN finding of gate-pkg 1.0.3) holds it.
      const warned = (await json<Found[]>(await s.call("GET", "/api/findings?repository=npm&status=open", { key: admin }))).find((x) => x.path === "gate-pkg/-/gate-pkg-1.0.3.tgz");
      expect(warned).toBeDefined();
      expect((await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.3.tgz", { key: reader })).status).toBe(200);
      expect(await json<Found>(await s.call("POST", `/api/findings/${warned!.id}/confirm`, { key: admin, body: {} }))).toMatchObject({ status: "confirmed" });
      expect((await s.call("GET", "/repository/npm/gate-pkg/-/gate-pkg-1.0.3.tgz", { key: reader })).status).toBe(403);
    } finally {
      expect((await s.call("PUT", "/api/settings/deny-list-action", { key: admin, body: { value: "WARN" } })).status).toBe(200);
    }
  });

  it("the refusal log lists each refused publish with who tried and why; nothing of it was stored", async () => {
    // A tag of its own: npm will not move `latest` back below the newer 1.0.2 by itself.
    const refused = await publish("gate-pkg", "1.0.1", ["--tag", "old"]);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain("MAL-2026-0001");
    type Refusal = { repository: string; path: string; name: string; version: string; reason: string; principal: string; refused: string };
    const log = await json<Refusal[]>(await s.call("GET", "/api/refusals?repository=npm", { key: admin }));
    expect(log[0]).toMatchObject({ repository: "npm", name: "gate-pkg", version: "1.0.1", principal: `key:${keyId(deployer)}`, reason: expect.stringContaining("MAL-2026-0001") });
    // The first refusal (the test above) is there too, older.
    expect(log.filter((r) => r.version === "1.0.1").length).toBeGreaterThanOrEqual(2);
    expect((await s.call("GET", "/api/refusals?repository=npm", { key: reader })).status).toBe(403);
    expect((await s.call("GET", "/api/refusals?after=bogus", { key: admin })).status).toBe(400);
  });

  it("a Maven deploy (a plain PUT) of a malware version is refused in plain text; a denied one is stored with a finding (WARN)", async () => {
    await s.createRepository("gate-maven", "maven");
    const added = await s.call("POST", "/api/deny-list", { key: admin, body: { ecosystem: "Maven", name: "org.example:gated", versions: "[1.0,2.0)", reason: "withdrawn by its vendor" } });
    expect(added.status).toBe(201);
    // The suite's deny-list action is WARN; a Maven refusal comes from malware data.
    const record = (id: string, ecosystem: string, name: string, versions: string[], extra: object = {}) =>
      writeFileSync(join(advisories, "records", `${id}.json`), JSON.stringify({ ...osv(id, name, {}), affected: [{ package: { ecosystem, name }, versions }], ...extra }));
    const critical = { severity: [{ type: "CVSS_V4", score: "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N" }] };
    record("MAL-2026-0003", "Maven", "org.example:gated", ["1.5"]);
    record("GHSA-gate-mvn-0001", "Maven", "org.example:gated", ["1.6"], critical);
    record("GHSA-gate-py-0001", "PyPI", "Held_Pkg", ["2.0"], critical);
    record("MAL-2026-0004", "PyPI", "gate-twine", ["1.0"]);
    await until(async () => {
      const st = await json<{ sources: { records: number }[] }>(await s.call("GET", "/api/advisories/status", { key: admin }));
      return st.sources[0]!.records === 8 ? true : undefined;
    });
    const refused = await s.call("PUT", "/repository/gate-maven/org/example/gated/1.5/gated-1.5.jar", { key: admin, body: new Uint8Array([1, 2, 3]) });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await refused.text()).toContain("MAL-2026-0003");
    expect((await s.call("GET", "/repository/gate-maven/org/example/gated/1.5/gated-1.5.jar", { key: admin })).status).toBe(404);
    // The deny list's WARN: stored, served, with a finding.
    const stored = await s.call("PUT", "/repository/gate-maven/org/example/gated/1.4/gated-1.4.jar", { key: admin, body: new Uint8Array([1]) });
    expect(stored.status).toBeLessThan(300);
    expect((await s.call("GET", "/repository/gate-maven/org/example/gated/1.4/gated-1.4.jar", { key: admin })).status).toBe(200);
    const findings = await json<{ path: string; type: string }[]>(await s.call("GET", "/api/findings?repository=gate-maven", { key: admin }));
    expect(findings).toContainEqual(expect.objectContaining({ path: "org/example/gated/1.4/gated-1.4.jar", type: "deny-list" }));
  });

  it("held versions are left out of maven-metadata.xml and of the PyPI simple page", async () => {
    expect((await s.call("PUT", "/repository/gate-maven/org/example/gated/1.6/gated-1.6.jar", { key: admin, body: new Uint8Array([6]) })).status).toBeLessThan(300);
    expect((await s.call("GET", "/repository/gate-maven/org/example/gated/1.6/gated-1.6.jar", { key: admin })).status).toBe(403);
    const metadata = await (await s.call("GET", "/repository/gate-maven/org/example/gated/maven-metadata.xml", { key: admin })).text();
    expect(metadata).toContain("<version>1.4</version>");
    expect(metadata).not.toContain("1.6");

    await s.createRepository("gate-pypi", "pypi");
    const upload = async (version: string) => {
      const content = Buffer.from(`held_pkg ${version}`);
      const form = uploadForm({ name: "held_pkg", version, filetype: "bdist_wheel", pyversion: "py3", sha256_digest: createHash("sha256").update(content).digest("hex") }, { name: `held_pkg-${version}-py3-none-any.whl`, content });
      const r = await s.call("POST", "/repository/gate-pypi/", { key: admin, headers: { "content-type": form.contentType }, body: form.body });
      expect(r.status, await r.text()).toBe(200);
    };
    await upload("1.0");
    await upload("2.0");
    const page = await (await s.call("GET", "/repository/gate-pypi/simple/held-pkg/", { key: admin })).text();
    expect(page).toContain("held_pkg-1.0-py3-none-any.whl");
    expect(page).not.toContain("held_pkg-2.0");
    expect((await json<Held[]>(await s.call("GET", "/api/held?repository=gate-pypi", { key: admin }))).map((h) => h.reason)).toEqual([expect.stringContaining("GHSA-gate-py-0001")]);
  });

  it("twine upload of a malware version is refused with the reason in the status line twine prints", async () => {
    const py = await ensurePythonClients();
    const dist = await buildDist(work, py, { name: "gate_twine", version: "1.0" });
    const dir = join(work, `twine-${++n}`);
    mkdirSync(dir, { recursive: true });
    const env = pythonEnv(dir, { TWINE_REPOSITORY_URL: `${s.gatewayUrl}/repository/gate-pypi/`, TWINE_USERNAME: "__token__", TWINE_PASSWORD: admin });
    const r = await run(py.twine, ["upload", "--non-interactive", "--disable-progress-bar", dist.wheel], { cwd: dir, env });
    expect(r.code).not.toBe(0);
    expect(r.output).toContain("403");
    expect(r.output).toContain("MAL-2026-0004");
    expect((await s.call("GET", "/repository/gate-pypi/simple/gate-twine/", { key: admin })).status).toBe(404);
  });

  it("npm audit reports what the server's advisory data says of the installed versions, and npm audit fix moves to a fixed one", async () => {
    // A moderate vulnerability: under the gate's threshold (HIGH), so stored and served, yet audited.
    writeFileSync(join(advisories, "records", "GHSA-audit-0001.json"), JSON.stringify(osv("GHSA-audit-0001", "audit-dep", { ranges: [{ type: "SEMVER", events: [{ introduced: "0" }, { fixed: "1.1.0" }] }] }, { database_specific: { severity: "MODERATE" } })));
    expectOk(await publish("audit-dep", "1.0.0"));
    expectOk(await publish("audit-dep", "1.1.0"));
    // Loaded on the next refresh: the bulk endpoint names it for 1.0.0 and says nothing of 1.1.0.
    type Bulk = Record<string, { id: string; severity: string; vulnerable_versions: string; url: string }[]>;
    const bulk = async (body: object) => json<Bulk>(await s.call("POST", "/repository/npm/-/npm/v1/security/advisories/bulk", { key: reader, body }));
    await until(async () => ((await bulk({ "audit-dep": ["1.0.0"] }))["audit-dep"] ? true : undefined));
    expect(await bulk({ "audit-dep": ["1.0.0", "1.1.0"], "gate-late": ["1.1.0"], "not-here": ["1.0.0"] })).toEqual({
      "audit-dep": [{ id: "GHSA-audit-0001", url: "https://osv.dev/vulnerability/GHSA-audit-0001", title: "GHSA-audit-0001 about audit-dep", severity: "moderate", vulnerable_versions: ">=0.0.0-0 <1.1.0", cwe: [] }],
    });
    expect(await bulk({ "audit-dep": ["1.1.0"] })).toEqual({});
    const bad = await s.call("POST", "/repository/npm/-/npm/v1/security/advisories/bulk", { key: reader, body: { "audit-dep": "1.0.0" } });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("not a list of strings");

    // The real client, with a lockfile, as a build runs it.
    const c = scratch(reader);
    writeFileSync(join(c.project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    expectOk(await npm(["install", "--no-audit", "--save-exact", "audit-dep@1.0.0"], { cwd: c.project, env: c.env }));
    const audited = await npm(["audit", "--json"], { cwd: c.project, env: c.env });
    expect(audited.code).toBe(1);
    const report = JSON.parse(audited.stdout) as { vulnerabilities: Record<string, { severity: string; range: string; via: { source: string; url: string }[]; fixAvailable: unknown }>; metadata: { vulnerabilities: Record<string, number> } };
    // npm works the range out of the package's versions: here the one before the fix.
    expect(report.vulnerabilities["audit-dep"]).toMatchObject({ severity: "moderate", range: "1.0.0", via: [expect.objectContaining({ source: "GHSA-audit-0001", url: "https://osv.dev/vulnerability/GHSA-audit-0001" })] });
    expect(report.metadata.vulnerabilities.moderate).toBe(1);
    // --audit-level above moderate passes the build.
    expect((await npm(["audit", "--audit-level=high"], { cwd: c.project, env: c.env })).code).toBe(0);
    expectOk(await npm(["audit", "fix", "--force"], { cwd: c.project, env: c.env }));
    expect((JSON.parse(readFileSync(join(c.project, "node_modules", "audit-dep", "package.json"), "utf8")) as { version: string }).version).toBe("1.1.0");
    const clean = await npm(["audit"], { cwd: c.project, env: c.env });
    expect(clean.code, clean.output).toBe(0);
    expect(clean.output).toContain("found 0 vulnerabilities");

    // pnpm (npm 6's audit endpoint: the dependency tree of its lockfile).
    const p = scratch(reader);
    writeFileSync(join(p.project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, dependencies: { "audit-dep": "1.0.0" } }));
    expectOk(await run(clients.pnpm, ["install", "--ignore-workspace", "--store-dir", join(p.dir, "pnpm-store")], { cwd: p.project, env: p.env }));
    const pnpmAudit = await run(clients.pnpm, ["audit", "--ignore-workspace", "--json"], { cwd: p.project, env: p.env });
    expect(pnpmAudit.code, pnpmAudit.output).toBe(1);
    const pr = JSON.parse(pnpmAudit.stdout) as { advisories: Record<string, { module_name: string; severity: string; vulnerable_versions: string; patched_versions: string; findings: { version: string; paths: string[] }[] }>; metadata: { vulnerabilities: Record<string, number> } };
    expect(pr.advisories["GHSA-audit-0001"]).toMatchObject({ module_name: "audit-dep", severity: "moderate", vulnerable_versions: ">=0.0.0-0 <1.1.0", patched_versions: ">=1.1.0", findings: [{ version: "1.0.0", paths: [expect.stringMatching(/audit-dep$/)] }] });
    expect(pr.metadata.vulnerabilities.moderate).toBe(1);
    expect((await run(clients.pnpm, ["audit", "--ignore-workspace", "--audit-level=high"], { cwd: p.project, env: p.env })).code).toBe(0);
  });
});
