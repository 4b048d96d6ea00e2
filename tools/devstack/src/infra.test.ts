import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createDatabase, startInfra, type Infra } from "./index.js";

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
