import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "@svc/devstack";
import { countingRelay } from "../bench/npm-proxy-bench.js";
import { run } from "./npm-clients.js";
import { basicAuth, buildDist, ensurePythonClients, fileSha256, pythonRuns, type Dist, type PythonClients } from "./pypi-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

/**
 * A PyPI proxy repository whose upstream is a hosted pypi repository of the same suite, reached
 * through a counting relay (http on 127.0.0.1: block-private-import-hosts turned off) that can
 * answer other bytes than the upstream's, with twine uploading to the upstream and pip installing
 * through the proxy: files fetched once, versions the gate refuses hidden so pip picks an older
 * one, pip still installing from the cache with the upstream stopped, a file that does not match
 * its declared sha256 refused and one whose page declares none not fetched, and read-only mode
 * serving only what is cached.
 */
describe("pypi proxy repositories", () => {
  let s: Suite;
  let py: PythonClients;
  let work: string;
  let relay: Awaited<ReturnType<typeof countingRelay>>;
  /** Paths (fragments of) whose upstream answers the relay changes: a file replaced, a page without its sha256 digests. */
  const tampering = new Map<string, (body: Buffer) => Buffer>();
  let admin: string;
  let deployer: string;
  let upstreamReader: string;
  let reader: string;
  let pkg1: Dist;
  let pkg2: Dist;
  let held1: Dist;
  let held2: Dist;
  let bad: Dist;
  let noHash: Dist;
  let young1: Dist;
  let young2: Dist;
  let runs: ReturnType<typeof pythonRuns>;

  const scratch = () => runs.scratch();
  const expectOk = (r: Parameters<typeof runs.expectOk>[0]) => runs.expectOk(r);
  const twine = (repository: string, files: string[], password: string) => runs.twine(`${s.gatewayUrl}/repository/${repository}/`, files, password);
  const index = (key: string) => `${s.gatewayUrl.replace("://", `://__token__:${key}@`)}/repository/pypi-proxy/simple/`;
  /** pip installs into a fresh venv, with no cache, from the proxy; answers pip's run and the installed module's VERSION. */
  const pipInstall = (args: string[]) => runs.pipInstall(index(reader), args);
  const sha256 = fileSha256;
  const basic = basicAuth;
  const until = async <T>(what: () => Promise<T | undefined>, ms = 30_000): Promise<T> => {
    for (const end = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 300))) {
      const got = await what();
      if (got !== undefined) return got;
      if (Date.now() > end) throw new Error("timed out waiting");
    }
  };
  const page = async (repository: string, project: string, key: string, accept?: string) =>
    s.call("GET", `/repository/${repository}/simple/${project}/`, { headers: { ...basic(key), ...(accept ? { accept } : {}) } });

  beforeAll(async () => {
    [s, py] = await Promise.all([
      startSuite({ env: { SVC_REPOSITORY: "pypi-up", SVC_REPOSITORY_FORMAT: "pypi", SVC_REPOSITORY_SCOPE_FROM_PATH: "true", SVC_PROXY_METADATA_TTL: "2s" } }),
      ensurePythonClients(),
    ]);
    work = mkdtempSync(join(inject("dataDir"), "pypi-proxy-"));
    runs = pythonRuns(work, py);
    admin = s.bootstrapKey;
    deployer = (await s.mint({ label: "uploader", grants: [{ scope: "pypi-up", tokens: ["deploy"] }] })).key;
    upstreamReader = (await s.mint({ label: "proxy-upstream", grants: [{ scope: "pypi-up", tokens: ["read-only"] }] })).key;
    reader = (await s.mint({ label: "proxy-reader", grants: [{ scope: "pypi-proxy", tokens: ["read-only"] }] })).key;
    [pkg1, pkg2, held1, held2, bad, noHash, young1, young2] = await Promise.all([
      buildDist(work, py, { name: "px-pkg", version: "1.0", requiresPython: ">=3.8" }),
      buildDist(work, py, { name: "px-pkg", version: "2.0", requiresPython: ">=3.8" }),
      buildDist(work, py, { name: "px-held", version: "1.0" }),
      buildDist(work, py, { name: "px-held", version: "2.0" }),
      buildDist(work, py, { name: "px-bad", version: "1.0" }),
      buildDist(work, py, { name: "px-nohash", version: "1.0" }),
      buildDist(work, py, { name: "px-young", version: "1.0" }),
      buildDist(work, py, { name: "px-young", version: "2.0" }),
    ]);
    expectOk(await twine("pypi-up", [pkg1.wheel, pkg1.sdist, pkg2.wheel, pkg2.sdist, held1.wheel, held2.wheel, bad.wheel, noHash.wheel, young1.wheel, young2.wheel], deployer));
    relay = await countingRelay(s.gatewayUrl, await freePort(), { tamper: (path) => [...tampering].find(([fragment]) => path.includes(fragment))?.[1] });
    expect((await s.call("PUT", "/api/settings/block-private-import-hosts", { key: admin, body: { value: false } })).status).toBe(200);
    // Applied by the artifacts service within moments (it follows the stored settings).
    await until(async () => {
      const res = await s.call("POST", "/api/repositories", {
        key: admin,
        body: { name: "pypi-proxy", format: "pypi", type: "proxy", upstream: { url: `${relay.url}repository/pypi-up/`, credentials: { username: "__token__", password: upstreamReader } } },
      });
      return res.status === 201 ? true : undefined;
    });
  }, 900_000);
  afterAll(async () => {
    await relay?.down().catch(() => {});
    await s?.stop();
  });

  it("serves the upstream's project page in this server's own HTML and JSON: links to its packages/, sha256, requires-python and upload times kept", async () => {
    const html = await page("pypi-proxy", "px-pkg", reader);
    expect(html.status).toBe(200);
    const text = await html.text();
    for (const f of [pkg1.wheel, pkg1.sdist, pkg2.wheel, pkg2.sdist]) {
      const version = f === pkg1.wheel || f === pkg1.sdist ? "1.0" : "2.0";
      expect(text).toContain(`href="../../packages/px-pkg/${version}/${basename(f)}#sha256=${sha256(f)}" data-requires-python="&gt;=3.8"`);
    }
    expect(text).not.toContain(relay.url);
    const json = await page("pypi-proxy", "px-pkg", reader, "application/vnd.pypi.simple.v1+json");
    expect(json.headers.get("content-type")).toMatch(/^application\/vnd\.pypi\.simple\.v1\+json/);
    const doc = (await json.json()) as { name: string; versions: string[]; files: { filename: string; url: string; hashes: { sha256: string }; "upload-time": string }[] };
    expect(doc.name).toBe("px-pkg");
    expect(doc.versions.sort()).toEqual(["1.0", "2.0"]);
    const wheel = doc.files.find((f) => f.filename === basename(pkg2.wheel))!;
    expect(wheel).toMatchObject({ url: `../../packages/px-pkg/2.0/${basename(pkg2.wheel)}`, hashes: { sha256: sha256(pkg2.wheel) } });
    // The upstream's PEP 700 upload time, carried through.
    expect(Date.now() - Date.parse(wheel["upload-time"])).toBeLessThan(3_600_000);
    // A project the upstream lacks is a 404; the proxy's own index lists the projects whose pages it holds.
    expect((await page("pypi-proxy", "px-none", reader)).status).toBe(404);
    expect(await (await s.call("GET", "/repository/pypi-proxy/simple/", { headers: basic(reader) })).text()).toContain('<a href="px-pkg/">px-pkg</a>');
  });

  it("pip installs through the proxy; each file is fetched from the upstream once and then served from the cache", async () => {
    const first = await pipInstall(["--only-binary", ":all:", "px-pkg"]);
    expectOk(first.r);
    expect((await first.imported("px_pkg")).stdout.trim()).toBe("px-pkg@2.0");
    const file = `/repository/pypi-up/packages/px-pkg/2.0/${basename(pkg2.wheel)}`;
    expect(relay.gets(file)).toBe(1);
    const again = await pipInstall(["--only-binary", ":all:", "px-pkg"]);
    expectOk(again.r);
    expect((await again.imported("px_pkg")).stdout.trim()).toBe("px-pkg@2.0");
    expect(relay.gets(file)).toBe(1);
    // pip download of the older sdist: fetched and checked the same way.
    const c = scratch();
    const dest = join(c.dir, "dl");
    expectOk(await run(py.python, ["-m", "pip", "download", "--isolated", "--no-cache-dir", "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "--dest", dest, "--index-url", index(reader), "px-pkg==1.0"], { cwd: c.dir, env: c.env }));
    expect(readdirSync(dest)).toEqual([basename(pkg1.sdist)]);
    expect(sha256(join(dest, basename(pkg1.sdist)))).toBe(sha256(pkg1.sdist));
    // The fetched file is indexed as an upload is: the proxy's own file is an artifact of the repository.
    const served = await s.call("GET", `/repository/pypi-proxy/packages/px-pkg/2.0/${basename(pkg2.wheel)}`, { headers: basic(reader) });
    expect(served.status).toBe(200);
    expect(createHash("sha256").update(Buffer.from(await served.arrayBuffer())).digest("hex")).toBe(sha256(pkg2.wheel));
  });

  it("an upload to a proxy repository is refused with twine's error", async () => {
    const r = await twine("pypi-proxy", [held1.sdist], admin);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain("405");
    expect(r.output).toContain("proxy repository");
    // Its files are yanked at its upstream.
    const yank = await s.call("POST", "/api/repositories/pypi-proxy/pypi/yank", { key: admin, body: { project: "px-pkg", version: "1.0", yanked: true } });
    expect(yank.status).toBe(409);
    // Nothing was stored: the proxy lists what its upstream has, and the upstream has no sdist of px-held.
    expect(await (await page("pypi-proxy", "px-held", reader)).text()).not.toContain(basename(held1.sdist));
  });

  it("a version the gate refuses is hidden from the proxy's page, so pip installs the older one, and its download is refused with the reason", async () => {
    const added = await s.call("POST", "/api/deny-list", { key: admin, body: { ecosystem: "PyPI", name: "PX_Held", versions: "==2.0", reason: "built by a compromised pipeline" } });
    expect(added.status).toBe(201);
    // The upstream (the same server) holds its stored 2.0 too: released there, so its page lists 2.0 again and only the proxy's gate hides it.
    type Held = { id: string; repository: string; path: string };
    const h = await until(async () => ((await (await s.call("GET", "/api/held?repository=pypi-up", { key: admin })).json()) as Held[]).find((x) => x.path === `packages/px-held/2.0/${basename(held2.wheel)}`));
    expect((await s.call("POST", `/api/held/${h.id}/release`, { key: admin })).status).toBe(204);
    expect(await (await page("pypi-up", "px-held", upstreamReader)).text()).toContain(basename(held2.wheel));

    const shown = await (await page("pypi-proxy", "px-held", reader)).text();
    expect(shown).toContain(basename(held1.wheel));
    expect(shown).not.toContain(basename(held2.wheel));
    const json = (await (await page("pypi-proxy", "px-held", reader, "application/vnd.pypi.simple.v1+json")).json()) as { versions: string[] };
    expect(json.versions).toEqual(["1.0"]);
    const installed = await pipInstall(["px-held"]);
    expectOk(installed.r);
    expect((await installed.imported("px_held")).stdout.trim()).toBe("px-held@1.0");
    const refused = await s.call("GET", `/repository/pypi-proxy/packages/px-held/2.0/${basename(held2.wheel)}`, { headers: basic(reader) });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("compromised pipeline");
  });

  it("the cooldown hides versions younger than the repository's minimum age (their PEP 700 upload time) and refuses their files; an allow lets one through", async () => {
    expect((await s.call("PUT", "/api/repositories/pypi-proxy/gate", { key: admin, body: { minAge: "1h" } })).status).toBe(200);
    try {
      // Every node applies a repository's minimum age within moments.
      await until(async () => (!(await (await page("pypi-proxy", "px-young", reader)).text()).includes("px_young-") ? true : undefined));
      const refused = await s.call("GET", `/repository/pypi-proxy/packages/px-young/2.0/${basename(young2.wheel)}`, { headers: basic(reader) });
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain("younger than the minimum age");
      expect(relay.gets(basename(young2.wheel))).toBe(0);
      const allowed = await s.call("POST", "/api/gate/allows", { key: admin, body: { ecosystem: "PyPI", name: "PX_Young", version: "1.0", reason: "needed today" } });
      expect(allowed.status).toBe(201);
      const shown = await until(async () => {
        const text = await (await page("pypi-proxy", "px-young", reader)).text();
        return text.includes(basename(young1.wheel)) ? text : undefined;
      });
      expect(shown).not.toContain(basename(young2.wheel));
      const installed = await pipInstall(["px-young"]);
      expectOk(installed.r);
      expect((await installed.imported("px_young")).stdout.trim()).toBe("px-young@1.0");
    } finally {
      expect((await s.call("PUT", "/api/repositories/pypi-proxy/gate", { key: admin, body: { minAge: null } })).status).toBe(200);
    }
  });

  it("imports a list of projects through the proxy into a hosted repository, with counts", async () => {
    expect((await s.call("POST", "/api/repositories", { key: admin, body: { name: "pypi-imported", format: "pypi" } })).status).toBe(201);
    expect((await s.call("POST", "/api/repositories/pypi-proxy/imports", { key: admin, body: { packages: ["px pkg"] } })).status).toBe(400);
    const started = await s.call("POST", "/api/repositories/pypi-proxy/imports", { key: admin, body: { packages: ["PX.Pkg==1.0", "px-none"], target: "pypi-imported" } });
    expect(started.status).toBe(202);
    type View = { state: string; imported: number; skipped: number; refused: number; refusals: { path: string }[]; export: string | null };
    const done = await until(async () => {
      const v = (await (await s.call("GET", started.headers.get("location")!, { key: admin })).json()) as View;
      return v.state === "running" ? undefined : v;
    }, 120_000);
    // The 1.0 sdist was fetched by pip download before; its wheel is fetched now; px-none is not upstream.
    expect(done).toMatchObject({ state: "done", imported: 1, skipped: 1, refused: 1 });
    expect(done.refusals.map((r) => r.path)).toEqual(["px-none"]);
    await until(async () => {
      const e = (await (await s.call("GET", `/api/repositories/pypi-proxy/exports/${done.export}`, { key: admin })).json()) as { state: string };
      return e.state === "running" ? undefined : e;
    });
    const hosted = await (await s.call("GET", "/repository/pypi-imported/simple/px-pkg/", { key: admin })).text();
    expect(hosted).toContain(`${basename(pkg1.wheel)}#sha256=${sha256(pkg1.wheel)}`);
    expect(hosted).toContain(`${basename(pkg1.sdist)}#sha256=${sha256(pkg1.sdist)}`);
    expect(hosted).not.toContain(basename(pkg2.wheel));
  });

  it("a file that does not match the sha256 its upstream's page declares is refused with 502 and not stored", async () => {
    tampering.set(basename(bad.wheel), () => Buffer.from("not the file the page declares"));
    expect(await (await page("pypi-proxy", "px-bad", reader)).text()).toContain(`#sha256=${sha256(bad.wheel)}`);
    const path = `/repository/pypi-proxy/packages/px-bad/1.0/${basename(bad.wheel)}`;
    const refused = await s.call("GET", path, { headers: basic(reader) });
    expect(refused.status).toBe(502);
    expect(await refused.text()).toContain("does not match the digest the upstream declares");
    // Nothing was stored: asked again, the upstream is asked again.
    expect((await s.call("GET", path, { headers: basic(reader) })).status).toBe(502);
    expect(relay.gets(basename(bad.wheel))).toBe(2);
    const installed = await pipInstall(["--retries", "0", "px-bad"]);
    expect(installed.r.code).not.toBe(0);
    expect(installed.r.output).toContain("502");
  });

  it("a file whose upstream page declares no sha256 is refused with 502 and neither fetched nor stored", async () => {
    // The upstream's page of px-nohash without digests: no #sha256= in HTML, empty hashes in PEP 691 JSON.
    tampering.set("/simple/px-nohash/", (body) => Buffer.from(body.toString("utf8").replace(/#sha256=[0-9a-f]{64}/g, "").replace(/"hashes"\s*:\s*\{[^}]*\}/g, '"hashes":{}')));
    const listed = await (await page("pypi-proxy", "px-nohash", reader)).text();
    expect(listed).toContain(basename(noHash.wheel));
    expect(listed).not.toContain("#sha256=");
    const path = `/repository/pypi-proxy/packages/px-nohash/1.0/${basename(noHash.wheel)}`;
    for (let i = 0; i < 2; i++) {
      const refused = await s.call("GET", path, { headers: basic(reader) });
      expect(refused.status).toBe(502);
      expect(await refused.text()).toContain("declares no sha256 for it");
    }
    expect(relay.gets(basename(noHash.wheel))).toBe(0);
    const installed = await pipInstall(["--retries", "0", "px-nohash"]);
    expect(installed.r.code).not.toBe(0);
    expect(relay.gets(basename(noHash.wheel))).toBe(0);
  });

  it("with the upstream stopped, pip still installs what the proxy holds; its page is served stale; what is not cached is a 502", async () => {
    await relay.down();
    try {
      // Past svc.proxy.metadata-ttl (2s): the page is asked for again, the upstream fails, the cached copy is served stale.
      await new Promise((r) => setTimeout(r, 2500));
      const stale = await page("pypi-proxy", "px-pkg", reader);
      expect(stale.status).toBe(200);
      expect(stale.headers.get("warning")).toBe('110 - "Response is Stale"');
      expect(Number(stale.headers.get("age"))).toBeGreaterThanOrEqual(2);
      const installed = await pipInstall(["--only-binary", ":all:", "px-pkg"]);
      expectOk(installed.r);
      expect((await installed.imported("px_pkg")).stdout.trim()).toBe("px-pkg@2.0");
      // A file of a cached page that was never fetched, and a page never fetched.
      expect((await s.call("GET", `/repository/pypi-proxy/packages/px-pkg/2.0/${basename(pkg2.sdist)}`, { headers: basic(reader) })).status).toBe(502);
      expect((await page("pypi-proxy", "px-never", reader)).status).toBe(502);
    } finally {
      await relay.up();
    }
  });
  it("in read-only mode the proxy serves its cached pages and files and fetches nothing: what is not cached is refused with the read-only reason", async () => {
    for (const service of ["gateway", "artifacts"] as const) await s.stopService(service);
    for (const service of ["artifacts", "gateway"] as const) await s.startService(service, { SVC_READ_ONLY: "true" });
    await eventually("the proxy answering in read-only mode", async () => ((await page("pypi-proxy", "px-pkg", reader).catch(() => undefined))?.status === 200 ? true : undefined), 60_000);
    const asked = relay.gets("/");

    const cached = await page("pypi-proxy", "px-pkg", reader);
    expect(cached.status).toBe(200);
    expect(await cached.text()).toContain(`${basename(pkg2.wheel)}#sha256=${sha256(pkg2.wheel)}`);
    const installed = await pipInstall(["--only-binary", ":all:", "px-pkg"]);
    expectOk(installed.r);
    expect((await installed.imported("px_pkg")).stdout.trim()).toBe("px-pkg@2.0");

    // A file of a cached page never fetched, and a page never fetched: refused, saying why.
    const file = await s.call("GET", `/repository/pypi-proxy/packages/px-pkg/2.0/${basename(pkg2.sdist)}`, { headers: basic(reader) });
    expect(file.status).toBe(403);
    expect(await file.text()).toContain("this server is read-only (svc.read-only)");
    const never = await page("pypi-proxy", "px-never-read-only", reader);
    expect(never.status).toBe(403);
    expect(await never.text()).toContain("this server is read-only (svc.read-only)");
    const refused = await pipInstall(["--retries", "0", "--no-binary", ":all:", "px-pkg"]);
    expect(refused.r.code).not.toBe(0);
    expect(refused.r.output).toContain("403");
    expect(relay.gets("/")).toBe(asked);
  }, 300_000);
});
