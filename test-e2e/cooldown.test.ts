import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "@svc/devstack";
import { closeNpmAgent, publish, publishDoc } from "../bench/npm-packages.js";
import { ensureVerdaccio, startVerdaccio, type RunningVerdaccio } from "../bench/verdaccio.js";
import { expectOk, run, scratchEnv, startNpmSuite, type Clients } from "./npm-clients.js";
import type { Suite } from "./suite.js";

/** Verdaccio kept between runs beside the npm clients (installed from the npm registry once). */
const VERDACCIO_TOOLS = resolve(import.meta.dirname, "..", ".data", "tools", "verdaccio");
const OLD = "2020-01-01T00:00:00.000Z";

interface Packument {
  "dist-tags": Record<string, string>;
  versions: Record<string, unknown>;
  time?: Record<string, string>;
}

/**
 * The cooldown (svc.gate.min-age) on an npm proxy repository in front of Verdaccio: a version
 * published upstream moments ago (cd-a 1.1.0) is hidden from the packument with `latest` on the
 * old one (cd-a 1.0.0, whose publish time this file moves back to 2020 in Verdaccio's storage),
 * `npm install` takes the old one, the young tarball is refused saying when it becomes
 * available; a version with no publish time is hidden too (fail closed); a repository's own
 * minimum age and a break-glass allow let it through; a blank setting shows it again, live.
 */
describe("the cooldown", () => {
  let s: Suite;
  let clients: Clients;
  let work: string;
  let origin: RunningVerdaccio;
  let admin: string;
  let reader: string;
  let registry: string;
  let n = 0;

  const call = (method: string, path: string, body?: object) => s.call(method, path, { key: admin, ...(body !== undefined ? { body } : {}) });
  const packument = async (name: string, abbreviated = false): Promise<Packument> => {
    const res = await s.call("GET", `/repository/cd-proxy/${name}`, { key: reader, headers: abbreviated ? { accept: "application/vnd.npm.install-v1+json" } : {} });
    expect(res.status).toBe(200);
    return (await res.json()) as Packument;
  };
  /** The versions cd-a's packument lists, once they are `want` (a setting reaches the artifacts service within moments). */
  const listedBecomes = async (want: string[]) => {
    let got: string[] = [];
    for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 300))) {
      got = Object.keys((await packument("cd-a")).versions).sort();
      if (JSON.stringify(got) === JSON.stringify(want)) return;
    }
    expect(got).toEqual(want);
  };
  /** npm installs `spec` into a clean project with a clean cache through the proxy; answers the installed version of cd-a. */
  const install = async (spec: string) => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(join(dir, "project"), { recursive: true });
    writeFileSync(join(dir, "npmrc"), `registry=${registry}\n${registry.replace(/^https?:/, "")}:_authToken=${reader}\nalways-auth=true\n`);
    writeFileSync(join(dir, "project", "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
    const r = await run(clients.npm, ["install", "--no-package-lock", spec], { cwd: join(dir, "project"), env: scratchEnv(dir) });
    return r;
  };
  const installed = (r: Awaited<ReturnType<typeof install>>, name: string) => {
    expectOk(r);
    const dir = join(work, `run-${n}`, "project", "node_modules", name, "package.json");
    return (JSON.parse(readFileSync(dir, "utf8")) as { version: string }).version;
  };
  /** Rewrites a package's publish times in Verdaccio's storage (its packuments are JSON files there). */
  const rewriteTimes = (name: string, change: (time: Record<string, string>) => void) => {
    const file = join(work, "upstream", "storage", name, "package.json");
    const doc = JSON.parse(readFileSync(file, "utf8")) as { time: Record<string, string> };
    change(doc.time);
    writeFileSync(file, JSON.stringify(doc));
  };

  beforeAll(async () => {
    const bin = ensureVerdaccio(VERDACCIO_TOOLS);
    ({ suite: s, clients, work } = await startNpmSuite("cooldown-", { SVC_PROXY_METADATA_TTL: "1s", SVC_BLOCK_PRIVATE_IMPORT_HOSTS: "false" }));
    admin = s.bootstrapKey;
    origin = await startVerdaccio(bin, join(work, "upstream"), await freePort());
    await publish(origin.registry, origin.token, publishDoc(origin.registry, "cd-a", "1.0.0"));
    await publish(origin.registry, origin.token, publishDoc(origin.registry, "cd-a", "1.1.0"));
    await publish(origin.registry, origin.token, publishDoc(origin.registry, "cd-untimed", "1.0.0"));
    rewriteTimes("cd-a", (time) => {
      time["1.0.0"] = OLD;
      time.created = OLD;
    });
    rewriteTimes("cd-untimed", (time) => {
      delete time["1.0.0"];
    });
    const created = await call("POST", "/api/repositories", { name: "cd-proxy", format: "npm", type: "proxy", upstream: { url: origin.registry, credentials: { token: origin.token } } });
    expect(created.status).toBe(201);
    reader = (await s.mint({ label: "cooldown-reader", grants: [{ scope: "cd-proxy", tokens: ["read-only"] }] })).key;
    registry = `${s.gatewayUrl}/repository/cd-proxy/`;
  }, 900_000);
  afterAll(async () => {
    await origin?.stop();
    await closeNpmAgent().catch(() => {});
    await s?.stop();
    if (work) rmSync(join(work, "upstream"), { recursive: true, force: true });
  });

  it("without a minimum age every version is listed", async () => {
    const doc = await packument("cd-a");
    expect(Object.keys(doc.versions).sort()).toEqual(["1.0.0", "1.1.0"]);
    expect(doc["dist-tags"].latest).toBe("1.1.0");
  });

  it("svc.gate.min-age is a run-time setting: a bad duration is refused, 1h is stored and shown", async () => {
    const bad = await call("PUT", "/api/settings/gate.min-age", { value: "three days" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("svc.gate.min-age must be a duration");
    const set = await call("PUT", "/api/settings/gate.min-age", { value: "1h" });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ name: "svc.gate.min-age", value: "1h", previous: "" });
    const rows = ((await (await call("GET", "/api/settings")).json()) as { settings: { name: string; value: string }[] }).settings;
    expect(rows.find((r) => r.name === "svc.gate.min-age")?.value).toBe("1h");
  });

  it("a young version is hidden from the packument (full and abbreviated) with latest on the old one, npm installs the old one, and its tarball is refused saying when it becomes available", async () => {
    await listedBecomes(["1.0.0"]);
    const full = await packument("cd-a");
    expect(full["dist-tags"].latest).toBe("1.0.0");
    expect(Object.keys(full.time ?? {})).not.toContain("1.1.0");
    const small = await packument("cd-a", true);
    expect(Object.keys(small.versions)).toEqual(["1.0.0"]);
    expect(small["dist-tags"].latest).toBe("1.0.0");

    expect(installed(await install("cd-a"), "cd-a")).toBe("1.0.0");
    const asked = await install("cd-a@1.1.0");
    expect(asked.code).not.toBe(0);

    const refused = await s.call("GET", "/repository/cd-proxy/cd-a/-/cd-a-1.1.0.tgz", { key: reader });
    expect(refused.status).toBe(403);
    const text = await refused.text();
    expect(text).toContain("cd-a@1.1.0 is younger than the minimum age of 1h (svc.gate.min-age)");
    expect(text).toMatch(/available from \d{4}-\d\d-\d\dT/);
    // The old one is fetched and served.
    expect((await s.call("GET", "/repository/cd-proxy/cd-a/-/cd-a-1.0.0.tgz", { key: reader })).status).toBe(200);
  });

  it("a version whose publish time the upstream does not give counts as too young (fail closed)", async () => {
    expect(Object.keys((await packument("cd-untimed")).versions)).toEqual([]);
    const refused = await s.call("GET", "/repository/cd-proxy/cd-untimed/-/cd-untimed-1.0.0.tgz", { key: reader });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("has no publish time known upstream");
  });

  it("each refused request for a young version's file is in the refusal log once per client and file, naming the cooldown and the version's age; hiding versions from listings adds nothing", async () => {
    interface Refusal { repository: string; path: string; ecosystem: string; name: string; version: string; reason: string; principal: string; refused: string }
    const log = async () => (await (await call("GET", "/api/refusals?repository=cd-proxy")).json()) as Refusal[];
    // The packuments listed above hid cd-a 1.1.0 and cd-untimed 1.0.0 many times: only the two tarball requests refused are here.
    const before = await log();
    expect(before.map((r) => `${r.name}@${r.version}`).sort()).toEqual(["cd-a@1.1.0", "cd-untimed@1.0.0"]);
    // The same client asking again (npm retries, a build in a loop) adds nothing; another client is another entry.
    for (let i = 0; i < 3; i++) expect((await s.call("GET", "/repository/cd-proxy/cd-a/-/cd-a-1.1.0.tgz", { key: reader })).status).toBe(403);
    expect((await s.call("GET", "/repository/cd-proxy/cd-a/-/cd-a-1.1.0.tgz", { key: admin })).status).toBe(403);
    const after = await log();
    expect(after).toHaveLength(3);
    const young = after.filter((r) => r.name === "cd-a");
    expect(young).toHaveLength(2);
    expect(new Set(young.map((r) => r.principal)).size).toBe(2);
    for (const r of young) {
      expect(r).toMatchObject({ repository: "cd-proxy", path: "cd-a/-/cd-a-1.1.0.tgz", ecosystem: "npm", version: "1.1.0" });
      expect(r.principal).toMatch(/^key:/);
      expect(r.reason).toContain("cd-a@1.1.0 is younger than the minimum age of 1h (svc.gate.min-age)");
      expect(r.reason).toMatch(/published \d{4}-\d\d-\d\dT[^ ]+ \(\d+[sm] ago\), available from/);
      expect(r.reason).toContain("the cooldown keeps it back");
    }
    const untimed = after.find((r) => r.name === "cd-untimed")!;
    expect(untimed.reason).toContain("has no publish time known upstream");
    expect(untimed.reason).toContain("the cooldown keeps it back");
    // Both of the reader's refusals name the reader.
    expect(untimed.principal).toBe(before.find((r) => r.name === "cd-a")!.principal);
  });

  it("a repository's own minimum age wins over the setting (off shows the young version; null inherits again) and is shown with the repository", async () => {
    const bad = await call("PUT", "/api/repositories/cd-proxy/gate", { minAge: "soon" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: "minAge" });
    expect((await call("PUT", "/api/repositories/cd-none/gate", { minAge: "1h" })).status).toBe(404);
    expect((await call("PUT", "/api/repositories/cd-proxy/gate", { minAge: "1h", extra: true })).status).toBe(400);

    const off = await call("PUT", "/api/repositories/cd-proxy/gate", { minAge: "off" });
    expect(off.status).toBe(200);
    expect(await off.json()).toEqual({ minAge: "off" });
    expect(await (await call("GET", "/api/repositories/cd-proxy")).json()).toMatchObject({ name: "cd-proxy", gate: { minAge: "off" } });
    expect(Object.keys((await packument("cd-a")).versions).sort()).toEqual(["1.0.0", "1.1.0"]);

    expect(await (await call("PUT", "/api/repositories/cd-proxy/gate", { minAge: "30d" })).json()).toEqual({ minAge: "30d" });
    const stricter = await s.call("GET", "/repository/cd-proxy/cd-a/-/cd-a-1.1.0.tgz", { key: reader });
    expect(await stricter.text()).toContain("minimum age of 30d (the minimum age of repository cd-proxy)");

    expect(await (await call("PUT", "/api/repositories/cd-proxy/gate", { minAge: null })).json()).toEqual({ minAge: null });
    expect(await (await call("GET", "/api/repositories/cd-proxy/gate")).json()).toEqual({ minAge: null });
    expect(Object.keys((await packument("cd-a")).versions)).toEqual(["1.0.0"]);
  });

  it("a break-glass allow lets the young version through, recording who and when; removed, the version is hidden again", async () => {
    const badEcosystem = await call("POST", "/api/gate/allows", { ecosystem: "cargo", name: "cd-a", reason: "urgent fix" });
    expect(badEcosystem.status).toBe(400);
    expect(await badEcosystem.json()).toMatchObject({ field: "ecosystem" });
    expect((await call("POST", "/api/gate/allows", { repository: "cd-none", ecosystem: "npm", name: "cd-a", reason: "urgent fix" })).status).toBe(400);
    expect((await call("POST", "/api/gate/allows", { ecosystem: "npm", name: "cd-a" })).status).toBe(400);

    const added = await call("POST", "/api/gate/allows", { repository: "cd-proxy", ecosystem: "npm", name: "cd-a", version: "1.1.0", reason: "the fix for CVE-2026-1 is needed today" });
    expect(added.status).toBe(201);
    const allow = (await added.json()) as { id: string; createdBy: string; created: string };
    expect(allow).toMatchObject({ repository: "cd-proxy", ecosystem: "npm", name: "cd-a", version: "1.1.0", reason: "the fix for CVE-2026-1 is needed today" });
    expect(allow.createdBy).toMatch(/^key:/);
    expect(Date.now() - Date.parse(allow.created)).toBeLessThan(600_000);
    const listed = (await (await call("GET", "/api/gate/allows")).json()) as { id: string }[];
    expect(listed.map((a) => a.id)).toEqual([allow.id]);

    const doc = await packument("cd-a");
    expect(Object.keys(doc.versions).sort()).toEqual(["1.0.0", "1.1.0"]);
    expect(doc["dist-tags"].latest).toBe("1.1.0");
    expect(installed(await install("cd-a"), "cd-a")).toBe("1.1.0");

    expect((await call("DELETE", `/api/gate/allows/${allow.id}`)).status).toBe(204);
    expect((await call("DELETE", `/api/gate/allows/${allow.id}`)).status).toBe(404);
    expect(await (await call("GET", "/api/gate/allows")).json()).toEqual([]);
    expect(Object.keys((await packument("cd-a")).versions)).toEqual(["1.0.0"]);
  });

  it("a blank svc.gate.min-age shows every version again, without a restart", async () => {
    const cleared = await call("PUT", "/api/settings/gate.min-age", { value: "" });
    expect(cleared.status).toBe(200);
    await listedBecomes(["1.0.0", "1.1.0"]);
    expect((await packument("cd-a"))["dist-tags"].latest).toBe("1.1.0");
    expect(Object.keys((await packument("cd-untimed")).versions)).toEqual(["1.0.0"]);
  });

  it("a minimum age set for this deployment's tenant applies to it; removed, every version is listed again", async () => {
    const set = await call("PUT", `/api/settings/gate.min-age?tenant=${s.tenant}`, { value: "2h" });
    expect(set.status).toBe(200);
    await listedBecomes(["1.0.0"]);
    // cd-a 1.1.0 is stored since the allow let it through (served as any stored file); cd-untimed was never fetched.
    const refused = await s.call("GET", "/repository/cd-proxy/cd-untimed/-/cd-untimed-1.0.0.tgz", { key: reader });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("minimum age of 2h (svc.gate.min-age)");
    expect((await call("DELETE", `/api/settings/gate.min-age?tenant=${s.tenant}`)).status).toBe(204);
    await listedBecomes(["1.0.0", "1.1.0"]);
  });
});
