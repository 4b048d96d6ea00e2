// Our own Postgres through initdb and pg_ctl, in a folder of the data folder. As root it runs as
// the `postgres` (or a `svcdata`) system user, since postgres refuses to run as root.
import { spawn, spawnSync, type SpawnOptions } from "node:child_process";
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import { chmodSync, closeSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import pg from "pg";
import type { PgBinaries } from "./binaries.js";
import { openLog, pidAlive, procCwd, readPidFile, samePath, sleep, tailOf } from "./process.js";

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(db)}`;
  return u.toString();
}

export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  // A suite's set-up while the machine's cores are busy (several suites starting at once) can
  // take the server more than a few seconds to accept: a slow start is not a failure.
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 30_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** CREATE DATABASE `name` (dropping it first if it exists), a copy of `template` when given; returns its URL. */
export async function createDatabase(adminDatabaseUrl: string, name: string, opts: { template?: string } = {}): Promise<string> {
  await withClient(adminDatabaseUrl, async (c) => {
    try {
      await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    } catch (err) {
      // Servers before 13 have no WITH (FORCE).
      if ((err as { code?: string }).code !== "42601") throw err;
      await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
    }
    await c.query(`CREATE DATABASE ${quoteIdent(name)}${opts.template ? ` TEMPLATE ${quoteIdent(opts.template)}` : ""}`);
  });
  return withDatabase(adminDatabaseUrl, name);
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}


export interface PgState {
  bins: PgBinaries;
  /** Folder owned by the user running postgres: data/, run/ (socket). */
  home: string;
  data: string;
  sockDir: string | undefined;
  user: string | undefined; // set when we are root
  logFile: string;
  port: number;
  running: boolean;
  /** The `postgres` role's password (local-secrets.ts keeps it in the data folder). */
  password: string;
  /** Made for this start: the server does not know it yet. */
  passwordNew: boolean;
}

/** A URL of our server that carries the password. */
export function pgUrl(st: Pick<PgState, "port" | "password">, db: string): string {
  return `postgres://postgres:${encodeURIComponent(st.password)}@127.0.0.1:${st.port}/${db}`;
}

function userExists(name: string): boolean {
  return spawnSync("id", ["-u", name], { stdio: "ignore" }).status === 0;
}

export function pgSystemUser(log: (l: string) => void): string {
  if (userExists("postgres")) return "postgres";
  if (userExists("svcdata")) return "svcdata";
  log("[infra] creating system user svcdata to run postgres (postgres refuses to run as root)");
  const r = spawnSync("useradd", ["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "svcdata"], {
    encoding: "utf8",
  });
  if (r.status !== 0 && !userExists("svcdata")) {
    throw new Error(`could not create system user svcdata: ${r.stderr || r.error?.message || "useradd failed"}`);
  }
  return "svcdata";
}

function uidGid(user: string): { uid: number; gid: number } {
  const uid = Number(spawnSync("id", ["-u", user], { encoding: "utf8" }).stdout.trim());
  const gid = Number(spawnSync("id", ["-g", user], { encoding: "utf8" }).stdout.trim());
  return { uid, gid };
}

/** Command line to run `cmd args` as the postgres user (runuser when we are root). */
function asPgUser(st: Pick<PgState, "user">, cmd: string, args: string[]): [string, string[]] {
  return st.user ? ["runuser", ["-u", st.user, "--", cmd, ...args]] : [cmd, args];
}

function canUserWrite(user: string, dir: string): boolean {
  return spawnSync("runuser", ["-u", user, "--", "test", "-w", dir, "-a", "-x", dir], { stdio: "ignore", cwd: "/" }).status === 0;
}

const FALLBACK_ROOT = "/var/lib/svc-infra";

/** Removes fallback postgres folders whose data folder is gone (e.g. deleted test folders). */
function collectOrphanedFallbacks(log: (l: string) => void): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(FALLBACK_ROOT).filter((e) => e.startsWith("pg-"));
  } catch {
    return;
  }
  for (const e of entries) {
    const dir = join(FALLBACK_ROOT, e);
    let origin: string;
    try {
      origin = readFileSync(join(dir, "ORIGIN"), "utf8").trim();
    } catch {
      continue;
    }
    if (origin === "" || existsSync(origin)) continue;
    const pid = readPidFile(join(dir, "data", "postmaster.pid"));
    if (pid !== undefined && pidAlive(pid)) continue;
    log(`[infra] removing ${dir} (its data folder ${origin} is gone)`);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Sets up the folder postgres runs in; returns it (normally <dataDir>/pg). */
export function preparePgHome(dataDir: string, user: string | undefined, log: (l: string) => void): string {
  const home = join(dataDir, "pg");
  mkdirSync(home, { recursive: true, mode: 0o700 });
  if (!user) return home;
  const { uid, gid } = uidGid(user);
  const fixOwner = (dir: string) => {
    const st = statSync(dir);
    if (st.uid !== uid) spawnSync("chown", ["-R", `${uid}:${gid}`, dir], { stdio: "ignore" });
    chmodSync(dir, 0o700);
  };
  fixOwner(home);
  if (canUserWrite(user, home)) return home;
  // The postgres user cannot reach <dataDir>/pg: give the data folder itself the search bit.
  const st = statSync(dataDir);
  if ((st.mode & 0o001) === 0) {
    chmodSync(dataDir, (st.mode & 0o7777) | 0o011);
    if (canUserWrite(user, home)) return home;
  }
  // A parent folder (e.g. /root) is closed to other users. We do not change permissions outside
  // the data folder; postgres keeps its files in a folder of its own instead.
  const alt = join(FALLBACK_ROOT, `pg-${createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 16)}`);
  mkdirSync(FALLBACK_ROOT, { recursive: true, mode: 0o755 });
  chmodSync(FALLBACK_ROOT, 0o755);
  collectOrphanedFallbacks(log);
  mkdirSync(alt, { recursive: true, mode: 0o700 });
  fixOwner(alt);
  writeFileSync(join(dataDir, "pg", "LOCATION"), `postgres data lives in ${alt} (user ${user} cannot reach ${dataDir})\n`);
  writeFileSync(join(alt, "ORIGIN"), `${resolve(dataDir)}\n`);
  log(`[infra] user ${user} cannot reach ${dataDir}; postgres data lives in ${alt}`);
  return alt;
}

function pgMajor(postgresBin: string): string {
  const out = spawnSync(postgresBin, ["--version"], { encoding: "utf8" }).stdout ?? "";
  const m = /(\d+)(?:\.(\d+))?/.exec(out);
  if (!m) return "";
  const major = Number(m[1]);
  return major >= 10 ? String(major) : `${m[1]}.${m[2] ?? "0"}`;
}

function runPg(st: PgState, cmd: string, args: string[], logFd?: number, timeoutMs = 60_000, input?: string, env: Record<string, string> = {}): Promise<{ code: number; output: string }> {
  const [c, a] = asPgUser(st, cmd, args);
  return new Promise((resolvePromise, reject) => {
    const opts: SpawnOptions = {
      cwd: st.home,
      env: { ...process.env, LC_ALL: "C", LANG: "C", ...env },
      stdio: [input === undefined ? "ignore" : "pipe", logFd ?? "pipe", logFd ?? "pipe"],
    };
    const child = spawn(c, a, opts);
    child.stdin?.end(input);
    let output = "";
    child.stdout?.on("data", (d: Buffer) => (output += d.toString("utf8")));
    child.stderr?.on("data", (d: Buffer) => (output += d.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // 'exit', not 'close': a started postmaster keeps the inherited log fd open.
    child.on("exit", (code) => {
      clearTimeout(timer);
      // let the remaining piped output arrive
      setImmediate(() => resolvePromise({ code: code ?? 1, output }));
    });
  });
}

export function postmasterPid(st: PgState): number | undefined {
  return readPidFile(join(st.data, "postmaster.pid"));
}

async function pgStatusRunning(st: PgState): Promise<boolean> {
  if (!existsSync(join(st.data, "postmaster.pid"))) return false;
  const r = await runPg(st, st.bins.pgCtl, ["status", "-D", st.data]);
  return r.code === 0;
}

export async function pgPrepare(st: PgState, log: (l: string) => void): Promise<void> {
  const versionFile = join(st.data, "PG_VERSION");
  if (existsSync(versionFile)) {
    const have = readFileSync(versionFile, "utf8").trim();
    const bin = pgMajor(st.bins.postgres);
    if (bin && have !== bin) {
      throw new Error(
        `The postgres data folder ${st.data} was created by PostgreSQL ${have}, but the binaries are ` +
          `PostgreSQL ${bin} (${st.bins.postgres}). Remove that folder (its data will be lost) or use another SVC_DATA_DIR.`,
      );
    }
    // A postmaster.pid whose pid now belongs to some other process (pid reuse after a crash):
    // postgres would refuse to start, and pg_ctl would signal that process. A postmaster of ours
    // has its working directory in our data folder.
    const pidFile = join(st.data, "postmaster.pid");
    const pid = postmasterPid(st);
    if (pid !== undefined) {
      const cwd = pidAlive(pid) ? procCwd(pid) : undefined;
      const ours = cwd !== undefined && samePath(cwd, st.data);
      if (!ours) {
        if (pidAlive(pid)) log(`[infra] removing stale ${pidFile} (pid ${pid} is not a postgres of ours)`);
        rmSync(pidFile, { force: true });
      }
    }
    if (await pgStatusRunning(st)) {
      log(`[infra] a postgres from a previous run is still running on ${st.data}; stopping it`);
      const fd = openLog(st.logFile, "pg_ctl stop (previous run)");
      try {
        await runPg(st, st.bins.pgCtl, ["stop", "-D", st.data, "-m", "fast", "-w", "-t", "30"], fd);
      } finally {
        closeSync(fd);
      }
    }
    await pgEnsurePassword(st, log);
    return;
  }
  if (existsSync(st.data) && readdirSync(st.data).length > 0) {
    log(`[infra] ${st.data} holds an incomplete postgres data folder (no PG_VERSION); initialising it again`);
    rmSync(st.data, { recursive: true, force: true });
  }
  log(`[infra] initdb ${st.data}`);
  const fd = openLog(st.logFile, "initdb");
  let r: { code: number; output: string };
  try {
    r = await runPg(st, st.bins.initdb, ["-D", st.data, "--auth=trust", "-U", "postgres", "--encoding=UTF8", "--no-locale"], fd, 120_000);
  } finally {
    closeSync(fd);
  }
  if (r.code !== 0) {
    throw new Error(`initdb failed (exit code ${r.code}). Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
  }
  await pgEnsurePassword(st, log);
}

const HBA_MARK = "# tools/devstack: password authentication";
/** Every connection asks for the password; replication connections too (pgStartReplica's base backup and stream). */
const HBA = [
  HBA_MARK,
  "local all all scram-sha-256",
  "host all all 127.0.0.1/32 scram-sha-256",
  "host all all ::1/128 scram-sha-256",
  "host replication postgres 127.0.0.1/32 scram-sha-256",
  "",
].join("\n");

/**
 * The SCRAM-SHA-256 verifier Postgres stores for `password` (RFC 5802, 7677): set in this form,
 * the password itself appears in no statement, so no log line of the server can show it.
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password.normalize("NFKC"), salt, iterations, 32, "sha256");
  const clientKey = createHmac("sha256", salted).update("Client Key").digest();
  const storedKey = createHash("sha256").update(clientKey).digest();
  const serverKey = createHmac("sha256", salted).update("Server Key").digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString("base64")}$${storedKey.toString("base64")}:${serverKey.toString("base64")}`;
}

/**
 * Anyone on the machine could connect to a trust-authenticated server: ours asks every
 * connection, socket or TCP, for the `postgres` role's password. A new password (a new data
 * folder, or its file deleted) and a server made before passwords (trust) are set up here, in
 * single-user mode, before the server starts.
 */
async function pgEnsurePassword(st: PgState, log: (l: string) => void): Promise<void> {
  const hbaFile = join(st.data, "pg_hba.conf");
  let hba = "";
  try {
    hba = readFileSync(hbaFile, "utf8");
  } catch {
    // none yet
  }
  if (hba === HBA && !st.passwordNew) return;
  log("[infra] setting the postgres password (password authentication)");
  const fd = openLog(st.logFile, "postgres --single (password)");
  let r: { code: number; output: string };
  try {
    // Single-user mode reads one statement a line from its standard input.
    const sql = `ALTER ROLE postgres PASSWORD '${scramVerifier(st.password)}';\n`;
    r = await runPg(st, st.bins.postgres, ["--single", "-D", st.data, "postgres"], fd, 60_000, sql);
  } finally {
    closeSync(fd);
  }
  if (r.code !== 0) throw new Error(`could not set the postgres password (exit code ${r.code}). Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
  writeFileSync(hbaFile, HBA, { mode: 0o600 });
  if (st.user) {
    const { uid, gid } = uidGid(st.user);
    spawnSync("chown", [`${uid}:${gid}`, hbaFile], { stdio: "ignore" });
  }
  st.passwordNew = false;
}

export async function pgStart(st: PgState, timeoutMs: number): Promise<void> {
  const sockPathLen = st.sockDir ? `${st.sockDir}/.s.PGSQL.${st.port}`.length : 0;
  const opts = [
    "-c listen_addresses=127.0.0.1",
    `-p ${st.port}`,
    // Unix socket paths are limited to ~107 bytes; without one, TCP is enough for us.
    st.sockDir && sockPathLen < 100 ? `-k ${shellQuote(st.sockDir)}` : "-c unix_socket_directories=''",
    "-c max_connections=200",
  ].join(" ");
  if (st.sockDir) mkdirSync(st.sockDir, { recursive: true, mode: 0o700 });
  if (st.user && st.sockDir) {
    const { uid, gid } = uidGid(st.user);
    spawnSync("chown", [`${uid}:${gid}`, st.sockDir], { stdio: "ignore" });
  }
  const fd = openLog(st.logFile, `pg_ctl start (port ${st.port})`);
  let r: { code: number; output: string };
  try {
    // No -l: the server writes to the log file we opened (the postgres user may not be able to
    // open a path under the data folder itself when we are root).
    r = await runPg(
      st,
      st.bins.pgCtl,
      ["start", "-D", st.data, "-w", "-t", String(Math.ceil(timeoutMs / 1000)), "-o", opts],
      fd,
      timeoutMs + 10_000,
    );
  } finally {
    closeSync(fd);
  }
  if (r.code !== 0) {
    throw new Error(`postgres did not start on 127.0.0.1:${st.port} (pg_ctl exit code ${r.code}). Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
  }
  st.running = true;
  // pg_ctl -w waits for "ready"; make sure TCP connections work too.
  const deadline = Date.now() + timeoutMs;
  const url = pgUrl(st, "postgres");
  for (;;) {
    try {
      await withClient(url, (c) => c.query("select 1"));
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(`postgres on 127.0.0.1:${st.port} does not accept connections (${(err as Error).message}). Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
      }
      await sleep(200);
    }
  }
}

export async function pgStop(st: PgState, mode: "fast" | "immediate" = "fast"): Promise<void> {
  if (!st.running && !(await pgStatusRunning(st))) return;
  const fd = openLog(st.logFile, `pg_ctl stop -m ${mode}`);
  try {
    await runPg(st, st.bins.pgCtl, ["stop", "-D", st.data, "-m", mode, "-w", "-t", "30"], fd);
  } finally {
    closeSync(fd);
  }
  st.running = false;
}

export function pgStopImmediateSync(st: PgState): void {
  const [c, a] = asPgUser(st, st.bins.pgCtl, ["stop", "-D", st.data, "-m", "immediate", "-w", "-t", "10"]);
  spawnSync(c, a, { stdio: "ignore", cwd: st.home, timeout: 15_000 });
  st.running = false;
}

/**
 * A hot standby of `primary` (a read replica, streaming from it) in `home`, started on `port`:
 * a base backup taken over a replication connection (pg_basebackup -R writes the standby's
 * settings), then a server that answers reads and refuses every write. Its data goes with `home`.
 */
export async function pgStartReplica(primary: PgState, home: string, port: number, timeoutMs: number, log: (l: string) => void): Promise<PgState> {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  if (primary.user) {
    const { uid, gid } = uidGid(primary.user);
    spawnSync("chown", ["-R", `${uid}:${gid}`, home], { stdio: "ignore" });
  }
  const st: PgState = { ...primary, home, data: join(home, "data"), sockDir: join(home, "run"), logFile: join(home, "replica.log"), port, running: false, passwordNew: false };
  rmSync(st.data, { recursive: true, force: true });
  // Beside the server's own pg_ctl (Debian's are in /usr/lib/postgresql/<major>/bin; PATH may hold links to some).
  const basebackup = join(dirname(realpathSync(primary.bins.pgCtl)), "pg_basebackup");
  log(`[infra] base backup of 127.0.0.1:${primary.port} into ${st.data}`);
  const fd = openLog(st.logFile, "pg_basebackup");
  let r: { code: number; output: string };
  try {
    r = await runPg(st, basebackup, ["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", st.data, "-R", "-X", "stream", "-c", "fast"], fd, 120_000, undefined, { PGPASSWORD: primary.password });
  } finally {
    closeSync(fd);
  }
  if (r.code !== 0) throw new Error(`pg_basebackup failed (exit code ${r.code}). Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
  await pgStart(st, timeoutMs);
  log(`[infra] read replica of 127.0.0.1:${primary.port} ready on 127.0.0.1:${port}`);
  return st;
}
