import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { keyId, makeKey, parseKey } from "@svc/keys";
import pg from "pg";
import { freePort } from "@svc/devstack";
import { spawnService } from "@svc/devstack/service-process";
import { cleanEnv, runToExit } from "@svc/devstack/service-runner";
import { startSuite, type Suite } from "./suite.js";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

describe("key-gated start", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite();
  });
  afterAll(() => s?.stop());

  it("provisions the bootstrap key with * on every repository and logs a SECURITY line", async () => {
    await s.waitForOutput(/SECURITY svc\.bootstrap-key is set/, { service: "auth" });
    const list = (await (await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).json()) as { id: string; expires: string | null; grants: unknown[] }[];
    const entry = list.find((c) => c.id === keyId(s.bootstrapKey));
    expect(entry?.expires).toBeNull();
    expect(entry?.grants).toEqual([{ scope: "*", tokens: ["*"], expires: null }]);
  });

  it("provisions it again on every boot, even after it was revoked", async () => {
    await s.call("DELETE", `/api/credentials/${keyId(s.bootstrapKey)}`, { key: s.bootstrapKey });
    expect((await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).status).toBe(401);
    await s.stopService("auth");
    await s.startService("auth");
    expect((await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).status).toBe(200);
  });
});

describe("servers the operator runs: a NATS cluster's list of servers, a bounded Postgres pool", () => {
  let s: Suite;
  let unreachable: string;
  beforeAll(async () => {
    // The first server of the list answers nothing: every service goes on to the next one.
    unreachable = `nats://127.0.0.1:${await freePort()}`;
    s = await startSuite({ env: { SVC_NATS_URL: `${unreachable}, ${inject("natsUrl")}`, SVC_DATABASE_POOL_SIZE: "2" } });
  });
  afterAll(() => s?.stop());

  it("connects every service through a server of the list that answers", async () => {
    for (const service of ["gateway", "auth", "artifacts", "admin", "walker", "notifier", "console"] as const) {
      await s.waitForOutput(/connected to NATS/, { service, timeoutMs: 20_000 });
    }
    // The log view is gathered from every process over NATS.
    const deadline = Date.now() + 20_000;
    let services = new Set<string>();
    while (Date.now() < deadline && services.size < 7) {
      const page = (await (await s.call("GET", "/api/logs?limit=1000", { key: s.bootstrapKey })).json()) as { entries: { service: string }[] };
      services = new Set(page.entries.map((e) => e.service));
      if (services.size < 7) await new Promise((r) => setTimeout(r, 250));
    }
    expect([...services].sort()).toEqual(["admin", "artifacts", "auth", "console", "gateway", "notifier", "walker"]);
  });

  it("opens no more Postgres connections per process than svc.database-pool-size, however busy", async () => {
    // Thirty requests at once that each need the auth service's database (a mint and a listing).
    const answers = await Promise.all(
      Array.from({ length: 15 }, (_, i) => [
        s.call("POST", "/api/credentials", { key: s.bootstrapKey, body: { label: `pool-${i}` } }).then((r) => r.status),
        s.call("GET", "/api/credentials?limit=500", { key: s.bootstrapKey }).then((r) => r.status),
      ]).flat(),
    );
    expect(answers.filter((st) => st === 201)).toHaveLength(15);
    expect(answers.filter((st) => st === 200)).toHaveLength(15);
    const db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ app: string; n: string }>(
        "select application_name as app, count(*) as n from pg_stat_activity where datname = current_database() and application_name like 'svc-%' group by 1",
      );
      const byApp = Object.fromEntries(rows.map((r) => [r.app, Number(r.n)]));
      expect(byApp["svc-auth"]).toBeGreaterThanOrEqual(1);
      for (const [app, n] of Object.entries(byApp)) expect(n, app).toBeLessThanOrEqual(2);
    } finally {
      await db.end();
    }
  });
});

describe("start-up refusals", () => {
  const env = () => ({
    SVC_DATABASE_URL: inject("adminDatabaseUrl"),
    SVC_NATS_URL: inject("natsUrl"),
    SVC_INTERNAL_SECRET: "s".repeat(40),
    SVC_FILESYSTEM_ROOT: join(inject("dataDir"), "refusals"),
    SVC_PORT: "0",
  });

  it("every service refuses to boot with a malformed bootstrap key, saying so clearly", async () => {
    const good = makeKey();
    const bad = good.slice(0, -1) + (good.endsWith("A") ? "B" : "A");
    for (const name of ["auth", "gateway", "artifacts", "admin"] as const) {
      const r = await runToExit(name, { ...env(), SVC_BOOTSTRAP_KEY: bad });
      expect(r.code, name).not.toBe(0);
      expect(r.output).toMatch(/svc\.bootstrap-key .*is not a well-formed key/);
      expect(r.output).not.toContain(bad);
    }
  });

  it("refuses a bootstrap key of another tenant and a bad setting value", async () => {
    const other = await runToExit("auth", { ...env(), SVC_BOOTSTRAP_KEY: makeKey("elsewhere") });
    expect(other.code).not.toBe(0);
    expect(other.output).toMatch(/tenant "elsewhere"/);
    const ttl = await runToExit("gateway", { ...env(), SVC_CACHE_TTL: "five minutes" });
    expect(ttl.code).not.toBe(0);
    expect(ttl.output).toMatch(/svc\.cache\.ttl \(from environment SVC_CACHE_TTL\)/);
    const arg = await runToExit("gateway", env(), ["-Dsvc.read-only=perhaps"]);
    expect(arg.code).not.toBe(0);
    expect(arg.output).toMatch(/svc\.read-only \(from -Dsvc\.read-only\)/);
  });

  it("refuses a repository format the artifacts service does not serve, naming the ones it does", async () => {
    const r = await runToExit("artifacts", { ...env(), SVC_REPOSITORY_FORMAT: "cobol" });
    expect(r.code).toBe(78);
    expect(r.output).toMatch(/svc\.repository-format is "cobol", a format this artifacts service does not serve \(it serves raw, npm, maven, pypi, go, cargo, oci\)/);
  });

  it("refuses a misspelt -D setting naming the one it most likely meant, and warns of a misspelt SVC_ variable", async () => {
    const typo = await runToExit("gateway", env(), ["-Dsvc.repository-scope-from-pth=true"]);
    expect(typo.code).not.toBe(0);
    expect(typo.output).toContain("svc.repository-scope-from-pth (-D argument): unknown setting; did you mean svc.repository-scope-from-path?");
    // The environment is shared with other programs: a warning at start, and the service runs.
    let output = "";
    const proc = spawnService({ name: "gateway", env: { ...cleanEnv(), ...env(), SVC_REPOSITORY_SCOPE_FROM_PTH: "true" }, onLine: (line) => (output += `${line}\n`) });
    try {
      const deadline = Date.now() + 30_000;
      while (!/"msg":"gateway ready"/.test(output) && !proc.exited && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(output).toMatch(/"msg":"gateway ready"/);
      const warning = output.split("\n").find((l) => l.includes("SVC_REPOSITORY_SCOPE_FROM_PTH"));
      expect(warning).toContain("did you mean SVC_REPOSITORY_SCOPE_FROM_PATH (svc.repository-scope-from-path)?");
      expect(JSON.parse(warning ?? "{}")).toMatchObject({ level: 40 });
    } finally {
      await proc.stop("SIGTERM", 10_000);
    }
  });
});

describe("the key tool", () => {
  it("prints one well-formed key and nothing else", () => {
    const out = execFileSync("npm", ["run", "--silent", "keygen"], { cwd: repoRoot, encoding: "utf8" });
    expect(out).toMatch(/^svck_default\.[A-Za-z0-9_-]{49}\n$/);
    expect(parseKey(out.trim()).ok).toBe(true);
    const acme = execFileSync("npm", ["run", "--silent", "keygen", "--", "acme"], { cwd: repoRoot, encoding: "utf8" });
    expect(acme).toMatch(/^svck_acme\./);
    const viaPnpm = execFileSync("npm", ["exec", "--yes", "pnpm@10.34.8", "--", "keygen", "team-a"], { cwd: repoRoot, encoding: "utf8" });
    expect(viaPnpm).toMatch(/^svck_team-a\.[A-Za-z0-9_-]{49}\n$/);
  });
});
