import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { strToU8, zipSync } from "fflate";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureDebianPackages } from "@svc/devstack";
import { run, type Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { exportCalls } from "./export-harness.js";
import { adminCaller, collectArtifactEvents, runWalk } from "./upstream.js";

/**
 * Go modules with the real go command (Debian's golang-go) through the gateway: versions
 * uploaded with curl (the go command has no publish command), then read by `go list`, `go mod
 * download` and `go build` with GOPROXY pointing at the repository. The go command sends no
 * credentials over plain http, so its repository is anonymously readable
 * (svc.anonymous-rights `gomods=repository:read`); credentials are tested with curl.
 */
const MODULE = "example.com/Team/hello";
/** As the go command writes it in URLs: upper case as `!` and the letter. */
const ESCAPED = "example.com/!team/hello";

type Files = Record<string, string>;
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** A module version's zip as `go mod download` would have it: every file under `<module>@<version>/`. */
function moduleZip(module: string, version: string, files: Files): { zip: Uint8Array; names: Files } {
  const names = Object.fromEntries(Object.entries(files).map(([f, text]) => [`${module}@${version}/${f}`, text]));
  return { zip: zipSync(Object.fromEntries(Object.entries(names).map(([n, t]) => [n, strToU8(t)]))), names };
}

/** The `h1:` hash the go command records in go.sum for a zip's files (golang.org/x/mod/sumdb/dirhash Hash1). */
const h1 = (names: Files) =>
  `h1:${createHash("sha256")
    .update(
      Object.keys(names)
        .sort()
        .map((n) => `${sha256(names[n]!)}  ${n}\n`)
        .join(""),
    )
    .digest("base64")}`;

const helloFiles = (version: string): Files => ({
  "go.mod": `module ${MODULE}\n\ngo 1.19\n`,
  "hello.go": `package hello\n\n// Greeting names the version it was built from.\nconst Greeting = "hello from ${version}"\n`,
  LICENSE: "MIT\n",
});

describe("Go modules with the go command", () => {
  let s: Suite;
  let work: string;
  let deployer: string;
  let reader: string;
  const uploaded: Record<string, { zip: Uint8Array; names: Files }> = {};

  beforeAll(async () => {
    [s] = await Promise.all([
      startSuite({ env: { SVC_REPOSITORY: "gomods", SVC_REPOSITORY_FORMAT: "go", SVC_REPOSITORY_SCOPE_FROM_PATH: "true", SVC_ANONYMOUS_RIGHTS: "gomods=repository:read,go-all=repository:read" } }),
      ensureDebianPackages(["golang-go", "curl"]),
    ]);
    work = mkdtempSync(join(inject("dataDir"), "go-modules-"));
    await s.createRepository("goprivate", "go");
    deployer = (await s.mint({ label: "go uploader", grants: [{ scope: "gomods", tokens: ["deploy"] }, { scope: "goprivate", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "go reader", grants: [{ scope: "goprivate", tokens: ["read-only"] }] })).key;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  let scratches = 0;
  const scratch = (): string => {
    const dir = join(work, `run-${++scratches}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  /** The go command with nothing of the machine's Go set-up: its own GOPATH, module cache and build cache; no checksum database. */
  const go = (dir: string, proxy: string, args: string[], extra: Record<string, string> = {}): Promise<Run> =>
    run("/usr/bin/go", args, {
      cwd: dir,
      env: {
        PATH: "/usr/bin:/bin",
        HOME: join(dir, "home"),
        GOENV: join(dir, "no-go-env"),
        GOPATH: join(dir, "gopath"),
        GOMODCACHE: join(dir, "modcache"),
        GOCACHE: join(dir, "gocache"),
        GOPROXY: proxy,
        GOSUMDB: "off",
        GONOSUMDB: "*",
        GONOSUMCHECK: "1",
        GOFLAGS: "-mod=mod -modcacherw",
        GOTOOLCHAIN: "local",
        GO111MODULE: "on",
        ...extra,
      },
    });
  const proxyOf = (repository: string) => `${s.gatewayUrl}/repository/${repository}`;
  /** A consumer module's folder, so `go list -m` has a main module. */
  const consumer = (requires = "") => {
    const dir = scratch();
    writeFileSync(join(dir, "go.mod"), `module example.com/consumer\n\ngo 1.19\n${requires}`);
    return dir;
  };

  /** curl's upload of a zip file (`--upload-file`: a PUT), with the key as Basic password when given; the status and the body. */
  const curlUpload = async (repository: string, path: string, zip: Uint8Array, key: string | undefined) => {
    const dir = scratch();
    writeFileSync(join(dir, "module.zip"), zip);
    const auth = key === undefined ? [] : ["-u", `go:${key}`];
    const r = await run("/usr/bin/curl", ["-sS", "-o", join(dir, "answer"), "-w", "%{http_code}", ...auth, "--upload-file", join(dir, "module.zip"), `${proxyOf(repository)}/${path}`], { cwd: dir, env: { PATH: "/usr/bin:/bin" } });
    expect(r.code, r.output).toBe(0);
    return { status: Number(r.stdout), body: readFileSync(join(dir, "answer"), "utf8") };
  };
  const basic = (key: string) => ({ authorization: `Basic ${Buffer.from(`go:${key}`).toString("base64")}` });

  it("curl uploads two versions, each an artifact with its event, and go list -m -versions lists them", async () => {
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === "gomods" && e.path.startsWith(`${ESCAPED}/`));
    try {
      for (const v of ["v1.0.0", "v1.1.0"]) {
        uploaded[v] = moduleZip(MODULE, v, helloFiles(v));
        const r = await curlUpload("gomods", `${ESCAPED}/@v/${v}.zip`, uploaded[v].zip, deployer);
        expect(r.status, r.body).toBe(201);
        expect(JSON.parse(r.body)).toMatchObject({ repository: "gomods", path: `${ESCAPED}/@v/${v}.zip`, sha256: sha256(uploaded[v].zip) });
      }
      const got = await events.until("both versions' events", (es) => es.length >= 2);
      expect(got.map((e) => [e.kind, e.package])).toEqual(["v1.0.0", "v1.1.0"].map((v) => ["artifact.published", { format: "go", name: MODULE, version: v, file: `${v}.zip` }]));
    } finally {
      await events.close();
    }
    const listed = await go(consumer(), proxyOf("gomods"), ["list", "-m", "-versions", MODULE]);
    expect(listed.code, listed.output).toBe(0);
    expect(listed.stdout.trim()).toBe(`${MODULE} v1.0.0 v1.1.0`);

    // The protocol's documents, as the go command reads them (anonymously: the repository is a public mirror).
    expect(await (await fetch(`${proxyOf("gomods")}/${ESCAPED}/@v/list`)).text()).toBe("v1.0.0\nv1.1.0\n");
    const info = (await (await fetch(`${proxyOf("gomods")}/${ESCAPED}/@v/v1.0.0.info`)).json()) as { Version: string; Time: string };
    expect(info.Version).toBe("v1.0.0");
    expect(Date.now() - Date.parse(info.Time)).toBeLessThan(3_600_000);
    expect(await (await fetch(`${proxyOf("gomods")}/${ESCAPED}/@v/v1.0.0.mod`)).text()).toBe(helloFiles("v1.0.0")["go.mod"]);
    expect(await (await fetch(`${proxyOf("gomods")}/${ESCAPED}/@latest`)).json()).toMatchObject({ Version: "v1.1.0" });
  });

  it("go mod download fetches the zip byte for byte, with the h1: hash of its files", async () => {
    const dir = consumer();
    const r = await go(dir, proxyOf("gomods"), ["mod", "download", "-json", `${MODULE}@v1.0.0`]);
    expect(r.code, r.output).toBe(0);
    const got = JSON.parse(r.stdout) as { Path: string; Version: string; Zip: string; Sum: string; GoModSum: string; Error?: string };
    expect(got).toMatchObject({ Path: MODULE, Version: "v1.0.0" });
    expect(got.Error).toBeUndefined();
    expect(sha256(readFileSync(got.Zip))).toBe(sha256(uploaded["v1.0.0"]!.zip));
    expect(got.Sum).toBe(h1(uploaded["v1.0.0"]!.names));
    expect(got.GoModSum).toBe(h1({ "go.mod": helloFiles("v1.0.0")["go.mod"]! }));
  });

  it("a consumer module builds against an uploaded version, and runs it", async () => {
    const dir = consumer(`\nrequire ${MODULE} v1.1.0\n`);
    writeFileSync(join(dir, "main.go"), `package main\n\nimport (\n\t"fmt"\n\n\thello "${MODULE}"\n)\n\nfunc main() { fmt.Println(hello.Greeting) }\n`);
    const built = await go(dir, proxyOf("gomods"), ["build", "-o", join(dir, "consumer"), "."]);
    expect(built.code, built.output).toBe(0);
    const ran = await run(join(dir, "consumer"), [], { cwd: dir, env: {} });
    expect(ran.stdout.trim()).toBe("hello from v1.1.0");
    expect(readFileSync(join(dir, "go.sum"), "utf8")).toContain(`${MODULE} v1.1.0 ${h1(uploaded["v1.1.0"]!.names)}`);
  });

  it("a module this repository lacks answers 404, so GOPROXY=ours,direct and ours,off go on to the next source", async () => {
    const missing = "nowhere.invalid/missing@v1.0.0";
    // Alone, the repository's answer is the go command's error.
    const alone = await go(consumer(), proxyOf("gomods"), ["mod", "download", "-json", missing]);
    expect(alone.code).not.toBe(0);
    expect(alone.output).toContain("404 no version v1.0.0 of module nowhere.invalid/missing in repository gomods");
    // After it, `off`: the go command reached it, so the 404 fell through.
    const off = await go(consumer(), `${proxyOf("gomods")},off`, ["mod", "download", "-json", missing]);
    expect(off.code).not.toBe(0);
    expect(off.output).toContain("GOPROXY=off");
    // After it, `direct`: the go command went to the module's own host (which does not resolve here).
    const direct = await go(consumer(), `${proxyOf("gomods")},direct`, ["mod", "download", "-json", missing]);
    expect(direct.code).not.toBe(0);
    expect(direct.output).toContain("https://nowhere.invalid/missing?go-get=1");
  });

  it("a refusal other than 404 stops the go command at ',' and falls through to the next source only at '|'", async () => {
    // The private repository is not anonymously readable, and the go command sends no credentials over http: 401.
    const module = "nowhere.invalid/private";
    const comma = await go(consumer(), `${proxyOf("goprivate")},direct`, ["list", "-m", "-versions", module]);
    expect(comma.code).not.toBe(0);
    expect(comma.output).toContain("/@v/list: 401 a key is required");
    expect(comma.output).not.toContain("go-get=1");
    // At '|' any error goes on to the next source: `direct`, the module's own host (which does not resolve here).
    const pipe = await go(consumer(), `${proxyOf("goprivate")}|direct`, ["list", "-m", "-versions", module]);
    expect(pipe.code).not.toBe(0);
    expect(pipe.output).toContain(`https://${module}?go-get=1`);
  });

  it("the go command sends no credentials over plain http, even from a .netrc with GOINSECURE set", async () => {
    const dir = consumer();
    const host = new URL(s.gatewayUrl);
    const netrc = join(dir, "netrc");
    writeFileSync(netrc, `machine ${host.hostname} login go password ${reader}\nmachine ${host.host} login go password ${reader}\n`);
    mkdirSync(join(dir, "home"), { recursive: true });
    writeFileSync(join(dir, "home", ".netrc"), readFileSync(netrc));
    const r = await go(dir, proxyOf("goprivate"), ["list", "-m", "-versions", MODULE], { NETRC: netrc, GOINSECURE: host.hostname });
    expect(r.code).not.toBe(0);
    expect(r.output).toContain("/@v/list: 401 a key is required");
  });

  it("a private repository takes the key with curl: write for uploads, read for reads, nothing anonymously", async () => {
    const v = moduleZip(MODULE, "v0.1.0", helloFiles("v0.1.0"));
    expect((await curlUpload("goprivate", `${ESCAPED}/@v/v0.1.0.zip`, v.zip, reader)).status).toBe(403);
    expect((await curlUpload("goprivate", `${ESCAPED}/@v/v0.1.0.zip`, v.zip, undefined)).status).toBe(401);
    expect((await curlUpload("goprivate", `${ESCAPED}/@v/v0.1.0.zip`, v.zip, deployer)).status).toBe(201);
    expect((await fetch(`${proxyOf("goprivate")}/${ESCAPED}/@v/list`)).status).toBe(401);
    const listed = await fetch(`${proxyOf("goprivate")}/${ESCAPED}/@v/list`, { headers: basic(reader) });
    expect(listed.status).toBe(200);
    expect(await listed.text()).toBe("v0.1.0\n");
    const zip = await fetch(`${proxyOf("goprivate")}/${ESCAPED}/@v/v0.1.0.zip`, { headers: basic(reader) });
    expect(sha256(new Uint8Array(await zip.arrayBuffer()))).toBe(sha256(v.zip));
  });

  it("a group serves its members' versions merged to the go command, each zip from the member that has it", async () => {
    const created = await s.call("POST", "/api/repositories", { key: s.bootstrapKey, body: { name: "go-all", format: "go", type: "group", members: ["goprivate", "gomods"] } });
    expect(created.status).toBe(201);
    const dir = consumer();
    const listed = await go(dir, proxyOf("go-all"), ["list", "-m", "-versions", MODULE]);
    expect(listed.code, listed.output).toBe(0);
    expect(listed.stdout.trim()).toBe(`${MODULE} v0.1.0 v1.0.0 v1.1.0`);
    const r = await go(dir, proxyOf("go-all"), ["mod", "download", "-json", `${MODULE}@v0.1.0`]);
    expect(r.code, r.output).toBe(0);
    expect((JSON.parse(r.stdout) as { Sum: string }).Sum).toBe(h1(moduleZip(MODULE, "v0.1.0", helloFiles("v0.1.0")).names));
    expect(await (await fetch(`${proxyOf("go-all")}/${ESCAPED}/@latest`)).json()).toMatchObject({ Version: "v1.1.0" });
  });

  it("refuses bad uploads with a clear error, and never changes a published version", async () => {
    const put = (path: string, body: Uint8Array) => s.call("PUT", `/repository/gomods/${path}`, { headers: basic(deployer), body });
    // The refusal's message (plain text: what a client that asks for no JSON is sent).
    const detail = (r: Response) => r.text();

    const other = moduleZip("example.com/other", "v1.0.0", { "go.mod": "module example.com/other\n" });
    let r = await put(`${ESCAPED}/@v/v1.2.0.zip`, other.zip);
    expect(r.status).toBe(400);
    expect(await detail(r)).toContain(`does not have prefix "${MODULE}@v1.2.0/"`);

    const misnamed = moduleZip(MODULE, "v1.2.0", { "go.mod": "module example.com/other\n" });
    r = await put(`${ESCAPED}/@v/v1.2.0.zip`, misnamed.zip);
    expect(r.status).toBe(400);
    expect(await detail(r)).toContain(`declares module example.com/other, not ${MODULE}`);

    const noGoMod = moduleZip(MODULE, "v1.2.0", { "hello.go": "package hello\n" });
    expect(await detail(await put(`${ESCAPED}/@v/v1.2.0.zip`, noGoMod.zip))).toContain("no go.mod at its root");

    r = await put(`${ESCAPED}/@v/v1.2.0.zip`, strToU8("this is not a zip file, whatever its name says"));
    expect(r.status).toBe(400);
    expect(await detail(r)).toContain("not a module zip");

    r = await put(`${ESCAPED}/@v/v1.2.zip`, uploaded["v1.0.0"]!.zip);
    expect(r.status).toBe(400);
    expect(await detail(r)).toContain("not canonical");
    r = await put(`${ESCAPED}/@v/v2.0.0.zip`, moduleZip(MODULE, "v2.0.0", helloFiles("v2.0.0")).zip);
    expect(r.status).toBe(400);
    expect(await detail(r)).toContain("/v2");
    r = await put(`${ESCAPED}/@v/v1.0.0.mod`, strToU8(`module ${MODULE}\n`));
    expect(r.status).toBe(405);

    // None of those left a version behind.
    expect(await (await fetch(`${proxyOf("gomods")}/${ESCAPED}/@v/list`)).text()).toBe("v1.0.0\nv1.1.0\n");

    // The same zip again changes nothing; another zip under a published version is refused, also once it was removed.
    r = await put(`${ESCAPED}/@v/v1.0.0.zip`, uploaded["v1.0.0"]!.zip);
    expect(r.status).toBe(200);
    const changed = moduleZip(MODULE, "v1.0.0", { ...helloFiles("v1.0.0"), "extra.go": "package hello\n" });
    r = await put(`${ESCAPED}/@v/v1.0.0.zip`, changed.zip);
    expect(r.status).toBe(409);
    expect(await detail(r)).toContain("never changes");
    expect((await s.call("DELETE", `/repository/gomods/${ESCAPED}/@v/v1.0.0.zip`, { headers: basic(deployer) })).status).toBe(204);
    expect(await (await fetch(`${proxyOf("gomods")}/${ESCAPED}/@v/list`)).text()).toBe("v1.1.0\n");
    expect((await fetch(`${proxyOf("gomods")}/${ESCAPED}/@v/v1.0.0.info`)).status).toBe(404);
    expect((await put(`${ESCAPED}/@v/v1.0.0.zip`, changed.zip)).status).toBe(409);
    expect((await put(`${ESCAPED}/@v/v1.0.0.zip`, uploaded["v1.0.0"]!.zip)).status).toBe(201);
    expect(await (await fetch(`${proxyOf("gomods")}/${ESCAPED}/@v/list`)).text()).toBe("v1.0.0\nv1.1.0\n");
  });

  it("the screening gate's deny list refuses a Go module's upload (OSV ecosystem Go)", async () => {
    const added = await s.call("POST", "/api/deny-list", { key: s.bootstrapKey, body: { ecosystem: "Go", name: "example.com/denied", versions: ">=1.0.0", reason: "a compromised release" } });
    expect(added.status).toBe(201);
    const z = moduleZip("example.com/denied", "v1.0.0", { "go.mod": "module example.com/denied\n" });
    const r = await curlUpload("gomods", "example.com/denied/@v/v1.0.0.zip", z.zip, deployer);
    expect(r.status).toBe(403);
    expect(r.body).toContain("a compromised release");
    expect((await fetch(`${proxyOf("gomods")}/example.com/denied/@v/list`)).status).toBe(404);
  });

  it("a version whose row is lost is listed again after the walks' backfill, with its first upload time; an export copies every version with its .mod and .info", async () => {
    const infoOf = async (repository: string, version: string) => (await (await fetch(`${proxyOf(repository)}/${ESCAPED}/@v/${version}.info`, { headers: basic(reader) })).json()) as { Version: string; Time: string };
    const listOf = async (repository: string) => {
      const r = await fetch(`${proxyOf(repository)}/${ESCAPED}/@v/list`, { headers: basic(reader) });
      return r.status === 200 ? r.text() : r.status;
    };
    const before = await infoOf("goprivate", "v0.1.0");
    const db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
    try {
      await db.query("delete from artifacts.go_versions where repository = 'goprivate' and version = 'v0.1.0'");
    } finally {
      await db.end();
    }
    expect(await listOf("goprivate")).toBe(404);
    const walks = (await adminCaller(s, "/api/walks", "walker")).call;
    const done = await runWalk(walks, "rebuild");
    expect(done.outcome).toBe("succeeded");
    expect(done.counts.backfill).toMatchObject({ filled: 1 });
    expect(await listOf("goprivate")).toBe("v0.1.0\n");
    expect(await infoOf("goprivate", "v0.1.0")).toEqual(before);
    expect(await (await fetch(`${proxyOf("goprivate")}/${ESCAPED}/@v/v0.1.0.mod`, { headers: basic(reader) })).text()).toBe(`module ${MODULE}\n\ngo 1.19\n`);

    // The export: the target lists the version and serves what the go command reads of it.
    await s.createRepository("gocopy", "go");
    const copies = exportCalls(() => s, () => s.bootstrapKey);
    const ended = await copies.exportAndWait("goprivate", "gocopy");
    expect(ended).toMatchObject({ state: "done", copied: 1, refused: 0 });
    const admin = basic(s.bootstrapKey);
    expect(await (await fetch(`${proxyOf("gocopy")}/${ESCAPED}/@v/list`, { headers: admin })).text()).toBe("v0.1.0\n");
    expect(await (await fetch(`${proxyOf("gocopy")}/${ESCAPED}/@v/v0.1.0.mod`, { headers: admin })).text()).toBe(`module ${MODULE}\n\ngo 1.19\n`);
    const [copied, source] = await Promise.all(["gocopy", "goprivate"].map(async (r) => sha256(new Uint8Array(await (await fetch(`${proxyOf(r)}/${ESCAPED}/@v/v0.1.0.zip`, { headers: admin })).arrayBuffer()))));
    expect(copied).toBe(source);
  });

  it("what was uploaded is served after a restart of the artifacts service", async () => {
    await s.stopService("artifacts");
    await s.startService("artifacts");
    const listed = await go(consumer(), proxyOf("gomods"), ["list", "-m", "-versions", MODULE]);
    expect(listed.code, listed.output).toBe(0);
    expect(listed.stdout.trim()).toBe(`${MODULE} v1.0.0 v1.1.0`);
  });
});
