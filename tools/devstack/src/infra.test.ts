import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createDatabase, freePort, releasePort, startInfra, type Infra } from "./index.js";
import { repoRoot } from "./service-process.js";

/** Sends `payload` (if any) on a raw socket and resolves with the first line the server answers. */
function firstLine(port: number, payload?: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: "127.0.0.1", port });
    let buf = "";
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer from 127.0.0.1:${port}`));
    }, timeoutMs);
    sock.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    sock.on("connect", () => {
      if (payload) sock.write(payload);
    });
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      const i = buf.indexOf("\r\n");
      if (i >= 0) {
        clearTimeout(timer);
        sock.destroy();
        resolve(buf.slice(0, i));
      }
    });
  });
}

/** PING after AUTH with the password the URL carries: the answer to PING. */
async function redisPing(port: number): Promise<string> {
  const password = decodeURIComponent(new URL(infraRef.redisUrl).password);
  const lines = await answerLines(port, `AUTH ${password}\r\nPING\r\n`, 2);
  return lines[1] ?? "";
}

/** Sends `payload` and resolves with the first `count` lines the server answers. */
function answerLines(port: number, payload: string, count: number, timeoutMs = 2000): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: "127.0.0.1", port });
    let buf = "";
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer from 127.0.0.1:${port}`));
    }, timeoutMs);
    sock.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    sock.on("connect", () => sock.write(payload));
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      const lines = buf.split("\r\n");
      if (lines.length > count) {
        clearTimeout(timer);
        sock.destroy();
        resolve(lines.slice(0, count));
      }
    });
  });
}

let infraRef: Infra;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (exited, not yet reaped by an init that does not reap) counts as gone.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Live child processes of this process (Linux /proc). */
function liveChildren(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z" && Number(fields[1]) === process.pid) out.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

describe("startInfra", () => {
  let dir: string;
  let infra: Infra;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "svc-infra-test-"));
    infra = await startInfra({ dataDir: dir, log: () => {}, env: {} });
    infraRef = infra;
  }, 60_000);

  afterAll(async () => {
    await infra?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("starts postgres with a ready database", async () => {
    expect(infra.databaseUrl).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/svc$/);
    const client = new pg.Client({ connectionString: infra.databaseUrl });
    await client.connect();
    try {
      const r = await client.query<{ one: number }>("select 1 as one");
      expect(r.rows[0]?.one).toBe(1);
    } finally {
      await client.end();
    }
  });

  it("creates (and re-creates) databases through the admin URL", async () => {
    const url = await createDatabase(infra.adminDatabaseUrl, "infra_test_db");
    expect(url).toMatch(/\/infra_test_db$/);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query("create table t (x int)");
    await client.end();
    const again = await createDatabase(infra.adminDatabaseUrl, "infra_test_db");
    const c2 = new pg.Client({ connectionString: again });
    await c2.connect();
    const r = await c2.query("select count(*)::int as n from pg_tables where tablename = 't'");
    expect(r.rows[0]?.n).toBe(0);
    await c2.end();
  });

  it("starts redis answering PING", async () => {
    expect(infra.redisUrl).toMatch(new RegExp(`^redis://:[^@]+@127\\.0\\.0\\.1:${infra.ports.redis}$`));
    expect(await redisPing(infra.ports.redis!)).toBe("+PONG");
  });

  it("starts nats, which greets with INFO", async () => {
    expect(infra.natsUrl).toMatch(new RegExp(`^nats://svc:[^@]+@127\\.0\\.0\\.1:${infra.ports.nats}$`));
    const line = await firstLine(infra.ports.nats!);
    expect(line.startsWith("INFO ")).toBe(true);
    expect(JSON.parse(line.slice(5))).toMatchObject({ jetstream: true });
  });

  it("lets no one in without the password: postgres, redis and nats; the passwords are kept 0600", async () => {
    const noPassword = new URL(infra.databaseUrl);
    noPassword.password = "";
    const wrong = new URL(infra.databaseUrl);
    wrong.password = "not-the-password";
    for (const url of [noPassword, wrong]) {
      const client = new pg.Client({ connectionString: url.toString() });
      client.on("error", () => {});
      await expect(client.connect()).rejects.toThrow(/password/);
      await client.end().catch(() => {});
    }
    // The unix socket too (where the server has one): no peer or trust exception.
    const sock = join(dir, "pg", "run");
    if (readdirSync(sock).some((f) => f.startsWith(".s.PGSQL."))) {
      const client = new pg.Client({ host: sock, port: infra.ports.postgres, user: "postgres", database: "postgres" });
      client.on("error", () => {});
      await expect(client.connect()).rejects.toThrow(/password/);
      await client.end().catch(() => {});
    }
    expect((await answerLines(infra.ports.redis!, "PING\r\n", 1))[0]).toMatch(/^-NOAUTH/);
    expect((await answerLines(infra.ports.nats!, 'CONNECT {"verbose":false}\r\nPING\r\n', 2))[1]).toMatch(/^-ERR 'Authorization Violation'/);
    for (const f of ["postgres-password", "redis-password", "nats-password"]) {
      expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
      const password = readFileSync(join(dir, f), "utf8").trim();
      for (const log of readdirSync(join(dir, "logs"))) expect(readFileSync(join(dir, "logs", log), "utf8")).not.toContain(password);
    }
  });

  it("stops and restarts redis on the same port", async () => {
    const port = infra.ports.redis!;
    await infra.stopServer("redis");
    await expect(redisPing(port)).rejects.toThrow();
    expect(infra.pids().redis).toBeUndefined();
    await infra.startServer("redis");
    expect(await redisPing(port)).toBe("+PONG");
  });

  it("stop() leaves no server and no child process behind", async () => {
    const pids = infra.pids();
    expect(Object.keys(pids).sort()).toEqual(["nats", "postgres", "redis"]);
    await infra.stop();
    await infra.stop(); // idempotent
    for (const pid of Object.values(pids)) expect(pidAlive(pid)).toBe(false);
    expect(infra.pids()).toEqual({});
    expect(liveChildren()).toEqual([]);
    await expect(redisPing(infra.ports.redis!)).rejects.toThrow();
    await expect(firstLine(infra.ports.nats!)).rejects.toThrow();
  });
});

describe("operator-provided servers", () => {
  it("starts nothing for SVC_*_URL and passes them through", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-infra-test-"));
    try {
      const infra = await startInfra({
        dataDir: dir,
        log: () => {},
        env: {
          SVC_DATABASE_URL: "postgres://u@db.example:5432/app",
          SVC_REDIS_URL: "redis://cache.example:6379",
          SVC_NATS_URL: "nats://bus.example:4222",
        },
      });
      expect(infra.databaseUrl).toBe("postgres://u@db.example:5432/app");
      expect(infra.adminDatabaseUrl).toBe("postgres://u@db.example:5432/postgres");
      expect(infra.redisUrl).toBe("redis://cache.example:6379");
      expect(infra.natsUrl).toBe("nats://bus.example:4222");
      expect(infra.pids()).toEqual({});
      await expect(infra.stopServer("redis")).rejects.toThrow(/operator/);
      await infra.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("supervised servers (as npm start runs them)", () => {
  let dir: string;
  let infra: Infra;
  let preferredRedis: number;
  const lines: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "svc-infra-test-"));
    // A usual port (as 56379 is npm start's), free and not reserved by anyone.
    preferredRedis = await freePort();
    releasePort(preferredRedis);
    infra = await startInfra({ dataDir: dir, log: (l) => lines.push(l), env: {}, detached: true, supervise: true, preferredPorts: { redis: preferredRedis } });
    infraRef = infra;
  }, 90_000);

  afterAll(async () => {
    await infra?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps a usual port reserved for this run, so that no other run of the project picks it", () => {
    expect(infra.ports.redis).toBe(preferredRedis);
    expect(readFileSync(join(tmpdir(), "svc-port-reservations", String(preferredRedis)), "utf8")).toBe(String(process.pid));
  });

  it("starts a redis killed with SIGKILL again on the same port, where it answers", async () => {
    const before = infra.pids().redis!;
    process.kill(before, "SIGKILL");
    await waitUntil("redis started again", () => lines.some((l) => l.includes(`redis started again on 127.0.0.1:${preferredRedis}`)));
    expect(infra.pids().redis).not.toBe(before);
    expect(await redisPing(preferredRedis)).toBe("+PONG");
    expect(lines.join("\n")).toMatch(new RegExp(`redis on 127\\.0\\.0\\.1:${preferredRedis} exited unexpectedly with signal SIGKILL; starting it again on the same port`));
    expect(readFileSync(join(tmpdir(), "svc-port-reservations", String(preferredRedis)), "utf8")).toBe(String(process.pid));
  });

  it("starts a postgres whose postmaster was killed with SIGKILL again on the same port", async () => {
    const before = infra.pids().postgres!;
    process.kill(before, "SIGKILL");
    const query = async () => {
      const client = new pg.Client({ connectionString: infra.databaseUrl });
      client.on("error", () => {});
      try {
        await client.connect();
        return (await client.query<{ one: number }>("select 1 as one")).rows[0]?.one === 1;
      } catch {
        return false;
      } finally {
        await client.end().catch(() => {});
      }
    };
    await waitUntil("postgres answering again", async () => infra.pids().postgres !== undefined && infra.pids().postgres !== before && (await query()), 90_000);
    expect(lines.join("\n")).toMatch(/postgres on 127\.0\.0\.1:\d+ exited unexpectedly/);
  }, 120_000);

  it("does not start a server stopped on purpose", async () => {
    await infra.stopServer("nats");
    await new Promise((r) => setTimeout(r, 1000));
    expect(infra.pids().nats).toBeUndefined();
    await infra.startServer("nats");
    expect(infra.pids().nats).toBeDefined();
  });
});

describe("the servers end with the process that started them", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "svc-infra-test-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The stand-in for npm start under the `tsx` command (whose signal relay kills a slow child), in its own process group. */
  async function startHolder(withServices = false): Promise<{ pid: number; servers: number[]; exited: Promise<void> }> {
    // With services, a data folder of its own: the holder killed just before may still be
    // listed in the shared folder's lock for a moment.
    const data = withServices ? join(dir, "with-services") : dir;
    const child = spawn(join(repoRoot, "node_modules", ".bin", "tsx"), [join(repoRoot, "tools", "devstack", "src", "infra-holder.fixture.ts"), data, ...(withServices ? ["services"] : [])], {
      cwd: repoRoot,
      detached: true,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const line = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stdout.on("data", (d: Buffer) => {
        buf += d.toString("utf8");
        if (buf.includes("\n")) resolve(buf.split("\n")[0]!);
      });
      void exited.then(() => reject(new Error(`the holder exited before its servers were ready: ${buf}`)));
    });
    const servers = Object.values(JSON.parse(line) as Record<string, number>);
    expect(servers).toHaveLength(withServices ? 4 : 3);
    return { pid: child.pid!, servers, exited };
  }

  it("Ctrl-C (SIGINT to the process group) stops every server, every time", async () => {
    for (let run = 1; run <= 3; run++) {
      const holder = await startHolder();
      process.kill(-holder.pid, "SIGINT");
      await holder.exited;
      await waitUntil(`run ${run}: servers ${holder.servers.join(", ")} gone`, () => holder.servers.every((p) => !pidAlive(p)), 60_000);
    }
  }, 300_000);

  it.each([
    ["its servers", false],
    ["its servers and the services it started as a test file does", true],
  ])("SIGKILL of that process: the reaper stops %s", async (_, withServices) => {
    const holder = await startHolder(withServices);
    const inner = readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number).filter((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, "utf8");
        return cmd.includes("infra-holder.fixture.ts") && cmd.includes(dir) && p !== holder.pid;
      } catch {
        return false;
      }
    });
    // tsx and the node process running the fixture under it, both killed at once.
    for (const p of [holder.pid, ...inner]) process.kill(p, "SIGKILL");
    await holder.exited;
    await waitUntil(`servers ${holder.servers.join(", ")} gone`, () => holder.servers.every((p) => !pidAlive(p)), 60_000);
    // Stopped by the reaper, not by chance (a service may also end when its servers are gone).
    if (withServices) expect(readFileSync(join(dir, "with-services", "logs", "reaper.log"), "utf8")).toMatch(/stopping .*notifier on port \d+/);
  }, 120_000);
});
