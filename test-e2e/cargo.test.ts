import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureDebianPackages } from "@svc/devstack";
import { keyId } from "@svc/keys";
import { run, type Run } from "./npm-clients.js";
import { startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";

/** cargo, unmodified: rustup's when the machine has it, else Debian's. */
async function ensureCargo(): Promise<string> {
  if (existsSync("/root/.cargo/bin/cargo")) return "/root/.cargo/bin/cargo";
  await ensureDebianPackages(["cargo"]);
  return "/usr/bin/cargo";
}

interface Crate {
  name: string;
  version: string;
  /** Cargo.toml's [dependencies] lines. */
  deps?: string[];
  features?: string[];
  /** src/lib.rs, or src/main.rs for a binary. */
  lib?: string;
  main?: string;
}

function writeCrate(dir: string, c: Crate): string {
  mkdirSync(join(dir, "src"), { recursive: true });
  const toml = [
    "[package]",
    `name = "${c.name}"`,
    `version = "${c.version}"`,
    'edition = "2021"',
    `description = "${c.name} for the cargo suite"`,
    'license = "MIT"',
    "",
    "[dependencies]",
    ...(c.deps ?? []),
    ...(c.features ? ["", "[features]", ...c.features] : []),
    "",
  ].join("\n");
  writeFileSync(join(dir, "Cargo.toml"), toml);
  if (c.lib !== undefined) writeFileSync(join(dir, "src", "lib.rs"), c.lib);
  if (c.main !== undefined) writeFileSync(join(dir, "src", "main.rs"), c.main);
  return dir;
}

/**
 * cargo against a cargo repository through the gateway, with minted keys granted that
 * repository only (svc.repository-scope-from-path: cargo cannot send Service-Repository-Name):
 * the crates are built here and depend on nothing of crates.io, which is not reachable.
 */
describe("cargo repositories with cargo", () => {
  let s: Suite;
  let cargo: string;
  let work: string;
  let deployer: string;
  let reader: string;
  let elsewhere: string;
  let homes = 0;

  beforeAll(async () => {
    [s, cargo] = await Promise.all([
      startSuite({ env: { SVC_REPOSITORY: "crates", SVC_REPOSITORY_FORMAT: "cargo", SVC_REPOSITORY_SCOPE_FROM_PATH: "true", SVC_ANONYMOUS_RIGHTS: "open-crates=repository:read" } }),
      ensureCargo(),
    ]);
    await s.createRepository("open-crates", "cargo");
    work = mkdtempSync(join(inject("dataDir"), "cargo-"));
    deployer = (await s.mint({ label: "publisher", grants: [{ scope: "crates", tokens: ["deploy"] }] })).key;
    reader = (await s.mint({ label: "reader", grants: [{ scope: "crates", tokens: ["read-only"] }] })).key;
    elsewhere = (await s.mint({ label: "elsewhere", grants: [{ scope: "open-crates", tokens: ["read-only"] }] })).key;
  }, 600_000);
  afterAll(async () => {
    await s?.stop();
  });

  const index = () => `sparse+${s.gatewayUrl}/repository/crates/`;

  /** A fresh CARGO_HOME naming our registry as the docs say (its cache empty: every crate is fetched). */
  const cargoHome = (): string => {
    const home = join(work, `cargo-home-${++homes}`);
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, "config.toml"), `[registries.ours]\nindex = "${index()}"\ncredential-provider = ["cargo:token"]\n\n[net]\nretry = 0\n`);
    return home;
  };

  /** cargo in `dir` with `key` as the registry's token (CARGO_REGISTRIES_OURS_TOKEN), nothing of the machine's set-up but the toolchain. */
  const cargoIn = (dir: string, args: string[], key: string | undefined, home = cargoHome()): Promise<Run> =>
    run(cargo, args, {
      cwd: dir,
      timeoutMs: 300_000,
      env: {
        PATH: `${dirname(cargo)}:/usr/bin:/bin`,
        HOME: join(work, "home"),
        CARGO_HOME: home,
        ...(existsSync("/root/.rustup") ? { RUSTUP_HOME: process.env.RUSTUP_HOME ?? "/root/.rustup" } : {}),
        CARGO_TERM_COLOR: "never",
        ...(key !== undefined ? { CARGO_REGISTRIES_OURS_TOKEN: key } : {}),
      },
    });
  const expectOk = (r: Run) => {
    if (r.code !== 0) throw new Error(`cargo exited ${r.code}:\n${r.output}`);
  };
  const publish = (dir: string, key = deployer) => cargoIn(dir, ["publish", "--registry", "ours", "--allow-dirty"], key);
  const alpha = (version: string) => writeCrate(join(work, `alpha-${version}`), { name: "alpha", version, lib: `pub fn greet() -> &'static str { "alpha ${version}" }\n` });
  const consumer = (name: string, req: string) =>
    writeCrate(join(work, name), { name, version: "0.0.1", deps: [`alpha = { version = "${req}", registry = "ours" }`], main: 'fn main() { println!("{}", alpha::greet()); }\n' });
  const indexLines = async (path: string, key = reader) => {
    const r = await s.call("GET", `/repository/crates/${path}`, { key });
    expect(r.status).toBe(200);
    return (await r.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };

  it("config.json names the API and downloads at the address the client used, and asks for the key where keyless callers may not read", async () => {
    const r = await s.call("GET", "/repository/crates/config.json", { key: reader });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ dl: `${s.gatewayUrl}/repository/crates/crates/{crate}/{crate}-{version}.crate`, api: `${s.gatewayUrl}/repository/crates`, "auth-required": true });
    const open = await fetch(`${s.gatewayUrl}/repository/open-crates/config.json`);
    expect(open.status).toBe(200);
    expect(await open.json()).toEqual({ dl: `${s.gatewayUrl}/repository/open-crates/crates/{crate}/{crate}-{version}.crate`, api: `${s.gatewayUrl}/repository/open-crates` });
  });

  it("cargo publish stores the crate as an artifact with its event, and the index lists it at once, with its checksum", async () => {
    const dir = alpha("0.1.0");
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === "crates" && e.path.startsWith("crates/alpha/"));
    try {
      const r = await publish(dir);
      expectOk(r);
      expect(r.output).toMatch(/Published alpha v0\.1\.0/);
      const got = await events.until("the publish's event", (es) => es.length >= 1);
      expect(got.map((e) => [e.kind, e.path, e.package])).toEqual([["artifact.published", "crates/alpha/alpha-0.1.0.crate", { format: "cargo", name: "alpha", version: "0.1.0", file: "alpha-0.1.0.crate" }]]);
    } finally {
      await events.close();
    }
    // The file cargo downloads (at the `dl` address) is a .crate whose checksum the index gives.
    const file = await s.call("GET", "/repository/crates/crates/alpha/alpha-0.1.0.crate", { key: reader });
    expect(file.status).toBe(200);
    const crate = Buffer.from(await file.arrayBuffer());
    expect([crate[0], crate[1]]).toEqual([0x1f, 0x8b]);
    const [line] = await indexLines("al/ph/alpha");
    expect(line).toEqual({ name: "alpha", vers: "0.1.0", deps: [], cksum: createHash("sha256").update(crate).digest("hex"), features: {}, yanked: false, links: null });
    const viaApi = await fetch(`${s.gatewayUrl}/repository/crates/api/v1/crates/alpha/0.1.0/download`, { headers: { authorization: reader } });
    expect(viaApi.status).toBe(200);
    expect(Buffer.from(await viaApi.arrayBuffer()).equals(crate)).toBe(true);
  });

  it("an index file answers its ETag, and 304 to a client that has it", async () => {
    const first = await s.call("GET", "/repository/crates/al/ph/alpha", { key: reader });
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^".+"$/);
    const again = await s.call("GET", "/repository/crates/al/ph/alpha", { key: reader, headers: { "if-none-match": etag! } });
    expect(again.status).toBe(304);
    expect((await s.call("GET", "/repository/crates/al/ph/nothing", { key: reader })).status).toBe(404);
  });

  it("a consumer crate depending on it builds with cargo build, with a read-only key", async () => {
    const dir = consumer("app", "0.1");
    const r = await cargoIn(dir, ["build"], reader);
    expectOk(r);
    expect(r.output).toMatch(/Downloaded alpha v0\.1\.0 \(registry `ours`\)/);
    const out = await run(join(dir, "target", "debug", "app"), [], { cwd: dir, env: {} });
    expect(out.stdout.trim()).toBe("alpha 0.1.0");
  });

  it("a crate depending on it lists the dependency in the index's shape (req, kind, no registry for its own)", async () => {
    const dir = writeCrate(join(work, "beta"), {
      name: "Beta_Crate",
      version: "1.0.0",
      deps: ['alpha = { version = "0.1.0", registry = "ours", default-features = false }'],
      features: ['default = ["fast"]', "fast = []"],
      lib: "pub fn twice() -> String { format!(\"{0}{0}\", alpha::greet()) }\n",
    });
    expectOk(await publish(dir));
    const [line] = await indexLines("be/ta/beta_crate");
    expect(line).toMatchObject({
      name: "Beta_Crate",
      vers: "1.0.0",
      deps: [{ name: "alpha", req: "^0.1.0", features: [], optional: false, default_features: false, target: null, kind: "normal" }],
      features: { default: ["fast"], fast: [] },
    });
    expect((line!.deps as Record<string, unknown>[])[0]).not.toHaveProperty("registry");
    // Names are unique without regard to case, - and _.
    const clash = writeCrate(join(work, "beta-clash"), { name: "beta-crate", version: "2.0.0", lib: "" });
    const refused = await publish(clash);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain("is already published here as `Beta_Crate`");
  });

  it("a published version is immutable: publishing it again is refused, in cargo's error body", async () => {
    // cargo looks in the index first and refuses itself.
    const dir = writeCrate(join(work, "alpha-again"), { name: "alpha", version: "0.1.0", lib: "pub fn greet() -> &'static str { \"changed\" }\n" });
    const r = await publish(dir);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain("alpha@0.1.0 already exists on `ours` index");
    // A client that does not look is refused by the server, with other content too.
    const meta = Buffer.from(JSON.stringify({ name: "alpha", vers: "0.1.0", deps: [], features: {} }));
    const crate = gzipSync(Buffer.from("other content"));
    const u32 = (n: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(n);
      return b;
    };
    const put = await fetch(`${s.gatewayUrl}/repository/crates/api/v1/crates/new`, {
      method: "PUT",
      headers: { authorization: deployer, "user-agent": "cargo/1.95.0" },
      body: Buffer.concat([u32(meta.length), meta, u32(crate.length), crate]),
    });
    expect(put.status).toBe(409);
    expect(await put.json()).toEqual({ errors: [{ detail: expect.stringContaining("crate version `alpha@0.1.0` is already uploaded") }] });
    // A body that is not cargo's framing is refused, saying what a publish is.
    const cut = await fetch(`${s.gatewayUrl}/repository/crates/api/v1/crates/new`, {
      method: "PUT",
      headers: { authorization: deployer, "user-agent": "cargo/1.95.0" },
      body: Buffer.concat([u32(meta.length), meta.subarray(0, 5)]),
    });
    expect(cut.status).toBe(400);
    expect(await cut.json()).toEqual({ errors: [{ detail: expect.stringContaining("a publish is cargo's framing (a u32 LE length, the JSON metadata") }] });
    const stored = await s.call("GET", "/repository/crates/crates/alpha/alpha-0.1.0.crate", { key: reader });
    expect(createHash("sha256").update(Buffer.from(await stored.arrayBuffer())).digest("hex")).toBe((await indexLines("al/ph/alpha"))[0]!.cksum);
  });

  it("a yanked version is not picked for a new lockfile, while a lockfile naming it still builds", async () => {
    expectOk(await publish(alpha("0.1.1")));
    const pinned = consumer("pinned", "=0.1.1");
    expectOk(await cargoIn(pinned, ["generate-lockfile"], reader));
    expect(readFileSync(join(pinned, "Cargo.lock"), "utf8")).toMatch(/name = "alpha"\nversion = "0\.1\.1"/);

    expectOk(await cargoIn(pinned, ["yank", "--version", "0.1.1", "alpha", "--registry", "ours"], deployer));
    const lines = await indexLines("al/ph/alpha");
    expect(lines.map((l) => [l.vers, l.yanked])).toEqual([
      ["0.1.0", false],
      ["0.1.1", true],
    ]);

    // The existing lockfile: built from a fresh cache, so the yanked .crate is downloaded again.
    const built = await cargoIn(pinned, ["build"], reader);
    expectOk(built);
    expect(built.output).toMatch(/Downloaded alpha v0\.1\.1/);
    expect((await run(join(pinned, "target", "debug", "pinned"), [], { cwd: pinned, env: {} })).stdout.trim()).toBe("alpha 0.1.1");

    const fresh = consumer("fresh", "=0.1.1");
    const refused = await cargoIn(fresh, ["generate-lockfile"], reader);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/yanked/);
    const caret = consumer("caret", "0.1");
    expectOk(await cargoIn(caret, ["generate-lockfile"], reader));
    expect(readFileSync(join(caret, "Cargo.lock"), "utf8")).toMatch(/name = "alpha"\nversion = "0\.1\.0"/);

    expectOk(await cargoIn(pinned, ["yank", "--undo", "--version", "0.1.1", "alpha", "--registry", "ours"], deployer));
    expect((await indexLines("al/ph/alpha")).map((l) => l.yanked)).toEqual([false, false]);
  });

  it("owners are listed and changed as the API answers them, and search finds crates by name", async () => {
    const dir = join(work, "alpha-0.1.0");
    const list = await cargoIn(dir, ["owner", "--list", "alpha", "--registry", "ours"], reader);
    expectOk(list);
    expect(list.stdout).toContain(keyId(deployer));
    expectOk(await cargoIn(dir, ["owner", "--add", "team-ci", "alpha", "--registry", "ours"], deployer));
    expect((await cargoIn(dir, ["owner", "--list", "alpha", "--registry", "ours"], reader)).stdout).toContain("team-ci");
    const found = await cargoIn(dir, ["search", "alph", "--registry", "ours"], reader);
    expectOk(found);
    expect(found.stdout).toMatch(/alpha = "0\.1\.1"\s+# alpha for the cargo suite/);
  });

  it("without a key, or with a key for another repository, cargo is refused and says why", async () => {
    const dir = consumer("nokey", "0.1");
    const none = await cargoIn(dir, ["generate-lockfile"], undefined);
    expect(none.code).not.toBe(0);
    expect(none.output).toContain("no token found for `ours`");
    const other = await cargoIn(dir, ["generate-lockfile"], elsewhere);
    expect(other.code).not.toBe(0);
    expect(other.output).toContain("does not hold repository:read on crates");
    // The gateway's refusal in cargo's error body, which cargo prints.
    const r = await fetch(`${s.gatewayUrl}/repository/crates/api/v1/crates/new`, { method: "PUT", headers: { "user-agent": "cargo/1.95.0", authorization: reader }, body: Buffer.alloc(8) });
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({ errors: [{ detail: expect.stringContaining("does not hold repository:write on crates") }] });
  });
});
