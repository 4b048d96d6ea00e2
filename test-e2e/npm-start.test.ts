// `npm start` itself, the way a developer runs it: the real supervisor (scripts/suite.ts) with its
// own Postgres, Redis and NATS under a data folder of its own. Slow (each suite starts its own
// servers): one file, suites shared between tests where they can be.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { keyId } from "@svc/keys";
import { freePort } from "@svc/devstack";
import { pidAlive, sleep } from "@svc/devstack/process";
import { repoRoot } from "@svc/devstack/service-process";

interface LocalSuite {
  proc: ChildProcess;
  dataDir: string;
  gateway: string;
  lines: string[];
  exited: Promise<number | null>;
  /** Resolves with the first line (since `from`) matching `re`. */
  waitFor(re: RegExp, timeoutMs?: number, from?: number): Promise<string>;
}

function startLocalSuite(dataDir: string, port: number, args: string[] = []): LocalSuite {
  mkdirSync(dataDir, { recursive: true });
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("SVC_")) env[k] = v;
  // Its own process group, as in a terminal: a Ctrl-C there is SIGINT to the whole group.
  const proc = spawn("npm", ["start", "--", ...args], { cwd: repoRoot, env: { ...env, SVC_DATA_DIR: dataDir, SVC_PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const lines: string[] = [];
  for (const s of [proc.stdout, proc.stderr]) {
    let rest = "";
    s.on("data", (d: Buffer) => {
      const parts = (rest + d.toString("utf8")).split("\n");
      rest = parts.pop() ?? "";
      lines.push(...parts);
    });
  }
  const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  return {
    proc,
    dataDir,
    gateway: `http://127.0.0.1:${port}`,
    lines,
    exited,
    async waitFor(re, timeoutMs = 150_000, from = 0) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = lines.slice(from).find((l) => re.test(l));
        if (hit) return hit;
        if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`no line matching ${re} (suite ${proc.exitCode !== null ? "exited" : "still running"}):\n${lines.slice(-40).join("\n")}`);
        await sleep(200);
      }
    },
  };
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs / 1000} s: ${what}`);
    await sleep(200);
  }
}

const status = (url: string, key?: string) =>
  fetch(url, { headers: key ? { "service-repository-key": key } : {}, signal: AbortSignal.timeout(5000) }).then(
    async (r) => {
      await r.body?.cancel();
      return r.status;
    },
    () => 0,
  );

/** Every live process below `root` (the services, Redis, NATS and their helpers). */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z") parent.set(Number(e), Number(fields[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, pp] of parent) if (pp === p) out.push(child), walk(child);
  };
  walk(root);
  return out;
}

const alive = (pid: number) => {
  if (!pidAlive(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

/** The node process running scripts/suite.ts, below npm. */
function suitePid(s: LocalSuite): number {
  const pid = descendants(s.proc.pid!).find((p) => readFileSync(`/proc/${p}/cmdline`, "utf8").includes("scripts/suite.ts"));
  if (pid === undefined) throw new Error("no scripts/suite.ts process below npm start");
  return pid;
}

const suites: LocalSuite[] = [];
async function stopSuite(s: LocalSuite): Promise<void> {
  if (s.proc.exitCode !== null || s.proc.signalCode !== null) return;
  s.proc.kill("SIGINT");
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([s.exited, new Promise((r) => (timer = setTimeout(r, 60_000)))]);
  clearTimeout(timer);
}

describe("npm start", () => {
  let a: LocalSuite;
  let b: LocalSuite;
  const root = join(inject("dataDir"), "npm-start");

  beforeAll(async () => {
    a = startLocalSuite(join(root, "a"), await freePort());
    b = startLocalSuite(join(root, "b"), await freePort());
    suites.push(a, b);
    await Promise.all([a.waitFor(/suite ready/), b.waitFor(/suite ready/)]);
  });

  afterAll(async () => {
    await Promise.all(suites.map(stopSuite));
  });

  it("two checkouts side by side (their own data folder and SVC_PORT) both come up", async () => {
    expect(await status(`${a.gateway}/health/ready`)).toBe(200);
    expect(await status(`${b.gateway}/health/ready`)).toBe(200);
    const ports = (s: LocalSuite) => [...(s.lines.find((l) => /suite ready/.test(l)) ?? "").matchAll(/ (\d{4,5})\b/g)].map((m) => m[1]);
    expect(ports(a).filter((p) => ports(b).includes(p))).toEqual([]);
    await stopSuite(b);
  });

  it("the local Postgres refuses a connection without its password", async () => {
    const port = /postgres ready on 127\.0\.0\.1:(\d+)/.exec(await a.waitFor(/postgres ready on/))?.[1];
    for (const url of [`postgres://postgres@127.0.0.1:${port}/svc`, `postgres://postgres:guess@127.0.0.1:${port}/svc`]) {
      const client = new pg.Client({ connectionString: url });
      client.on("error", () => {});
      await expect(client.connect()).rejects.toThrow(/password/);
      await client.end().catch(() => {});
    }
    const password = readFileSync(join(a.dataDir, "postgres-password"), "utf8").trim();
    const client = new pg.Client({ connectionString: `postgres://postgres:${password}@127.0.0.1:${port}/svc` });
    await client.connect();
    await client.end();
  });

  it("a service killed with SIGKILL is restarted, says so, and the gateway is ready again", async () => {
    const key = readFileSync(join(a.dataDir, "bootstrap-key"), "utf8").trim();
    const list = JSON.parse(readFileSync(join(a.dataDir, "services.pid"), "utf8")) as Array<{ name: string; pid: number }>;
    const auth = list.find((e) => e.name === "auth");
    expect(auth).toBeDefined();
    // The gateway reaches auth over its Unix socket (svc.socket), which only its user and group may open.
    const socket = join(a.dataDir, "run", "auth.sock");
    expect(statSync(socket).mode & 0o777).toBe(0o660);
    const from = a.lines.length;
    process.kill(-auth!.pid, "SIGKILL");
    await a.waitFor(/auth exited unexpectedly with signal SIGKILL; restarting it in 1 s/, 30_000, from);
    await a.waitFor(/"service":"suite".*auth is live again/, 90_000, from);
    await waitUntil("gateway ready again", async () => (await status(`${a.gateway}/health/ready`)) === 200, 60_000);
    expect(await status(`${a.gateway}/api/capabilities`, key)).toBe(200);
    // The socket file the killed process left was taken over by the new one.
    expect(await status(`${a.gateway}/api/credentials`, key)).toBe(200);
    expect(statSync(socket).isSocket()).toBe(true);
    expect(a.proc.exitCode).toBeNull();
  });

  it("a local server killed with SIGKILL is started again on its port, and the gateway works again", async () => {
    const key = readFileSync(join(a.dataDir, "bootstrap-key"), "utf8").trim();
    const port = /redis ready on 127\.0\.0\.1:(\d+)/.exec(await a.waitFor(/redis ready on/))?.[1];
    const before = Number(readFileSync(join(a.dataDir, "redis.pid"), "utf8"));
    const from = a.lines.length;
    process.kill(before, "SIGKILL");
    await a.waitFor(new RegExp(`redis on 127\\.0\\.0\\.1:${port} exited unexpectedly with signal SIGKILL; starting it again on the same port`), 30_000, from);
    await a.waitFor(new RegExp(`redis started again on 127\\.0\\.0\\.1:${port}`), 60_000, from);
    expect(Number(readFileSync(join(a.dataDir, "redis.pid"), "utf8"))).not.toBe(before);
    await waitUntil("gateway ready again", async () => (await status(`${a.gateway}/health/ready`)) === 200, 60_000);
    expect(await status(`${a.gateway}/api/capabilities`, key)).toBe(200);
    expect(a.proc.exitCode).toBeNull();
  });

  it("Ctrl-C (SIGINT to npm start's process group) stops every process within svc.shutdown-grace; --no-bootstrap-key leaves no bootstrap key on the next boot", async () => {
    const bootstrap = readFileSync(join(a.dataDir, "bootstrap-key"), "utf8").trim();
    const call = (method: string, path: string, key: string, body?: unknown) =>
      fetch(`${a.gateway}${path}`, { method, headers: { "service-repository-key": key, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
    const minted = await call("POST", "/api/credentials", bootstrap, { label: "real admin" });
    expect(minted.status).toBe(201);
    const real = (await minted.json()) as { id: string; key: string };
    expect((await call("POST", `/api/credentials/${real.id}/grants`, bootstrap, { scope: "*", tokens: ["*"] })).status).toBe(200);
    expect((await call("DELETE", `/api/credentials/${keyId(bootstrap)}`, real.key)).status).toBeLessThan(300);

    const dataLine = await a.waitFor(/postgres ready on/);
    const pgData = /\(data ([^)]+)\)/.exec(dataLine)?.[1] ?? "";
    const pids = [...descendants(a.proc.pid!), Number(readFileSync(join(pgData, "postmaster.pid"), "utf8").split("\n")[0])];
    expect(pids.length).toBeGreaterThan(8);
    const killedAt = Date.now();
    // A terminal's Ctrl-C reaches the suite and npm at once, and npm relays it: on a busy machine
    // the relay comes late. Here it comes 1.5 s late, and it must not count as a second Ctrl-C.
    process.kill(suitePid(a), "SIGINT");
    await sleep(1500);
    process.kill(a.proc.pid!, "SIGINT");
    await waitUntil("every process of the suite gone", () => pids.every((p) => !alive(p)), 25_000);
    expect(Date.now() - killedAt).toBeLessThan(25_000);
    expect(await a.exited).toBe(0);
    // Each service removed its socket file as it stopped.
    expect(readdirSync(join(a.dataDir, "run"))).toEqual([]);

    a = startLocalSuite(a.dataDir, Number(new URL(a.gateway).port), ["--no-bootstrap-key"]);
    suites.push(a);
    await a.waitFor(/suite ready/);
    expect(await status(`${a.gateway}/api/capabilities`, bootstrap)).toBe(401);
    expect(await status(`${a.gateway}/api/capabilities`, real.key)).toBe(200);
    expect(a.lines.some((l) => /SECURITY svc\.bootstrap-key is set/.test(l))).toBe(false);
    expect(existsSync(join(a.dataDir, "bootstrap-key"))).toBe(false);
    expect(existsSync(join(a.dataDir, "bootstrap-key.disabled"))).toBe(true);
  });

  it("stops the suite on a crash loop: 5 exits in a row, each soon after its start", async () => {
    const list = JSON.parse(readFileSync(join(a.dataDir, "services.pid"), "utf8")) as Array<{ name: string; pid: number }>;
    let pid = list.find((e) => e.name === "auth")!.pid;
    for (let crash = 1; crash <= 5; crash++) {
      const from = a.lines.length;
      process.kill(-pid, "SIGKILL");
      if (crash === 5) break;
      await a.waitFor(new RegExp(`restarting it in ${2 ** (crash - 1)} s \\(crash ${crash} in a row\\)`), 30_000, from);
      pid = Number(/auth restarted \(pid (\d+)\)/.exec(await a.waitFor(/auth restarted \(pid \d+\)/, 60_000, from))?.[1]);
    }
    await a.waitFor(/auth is in a crash loop; stopping the suite/, 30_000);
    expect(await a.exited).not.toBe(0);
  });

  it("a suite killed with SIGKILL leaves no service and no server behind (its reaper stops them)", async () => {
    const c = startLocalSuite(join(root, "c"), await freePort());
    suites.push(c);
    await c.waitFor(/suite ready/);
    const pgData = /\(data ([^)]+)\)/.exec(await c.waitFor(/postgres ready on/))?.[1] ?? "";
    const postmaster = Number(readFileSync(join(pgData, "postmaster.pid"), "utf8").split("\n")[0]);
    // npm, then the node process running scripts/suite.ts, then the services and servers.
    const pids = [...descendants(suitePid(c)), postmaster];
    expect(pids.length).toBeGreaterThan(8);
    process.kill(suitePid(c), "SIGKILL");
    await waitUntil("every process of the suite gone", () => pids.every((p) => !alive(p)), 60_000);
    c.proc.kill("SIGKILL");
  }, 300_000);

  it("a second Ctrl-C kills everything at once (exit 130)", async () => {
    const d = startLocalSuite(join(root, "d"), await freePort());
    suites.push(d);
    await d.waitFor(/suite ready/);
    const pgData = /\(data ([^)]+)\)/.exec(await d.waitFor(/postgres ready on/))?.[1] ?? "";
    const pids = [...descendants(d.proc.pid!), Number(readFileSync(join(pgData, "postmaster.pid"), "utf8").split("\n")[0])];
    // Signalled directly, so the count does not depend on when npm relays: under npm start the
    // signal after the one that started the shutdown is taken as npm's relay of it, the next kills.
    const pid = suitePid(d);
    process.kill(pid, "SIGINT");
    await d.waitFor(/SIGINT: shutting down/, 30_000);
    process.kill(pid, "SIGINT");
    await sleep(200);
    process.kill(pid, "SIGINT");
    await d.waitFor(/SIGINT again: killing everything/, 30_000);
    expect(await d.exited).toBe(130);
    await waitUntil("every process of the suite gone", () => pids.every((p) => !alive(p)), 60_000);
  }, 300_000);
});
