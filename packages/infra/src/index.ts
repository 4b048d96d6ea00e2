// Local infrastructure for the suite: our own Postgres, Redis and NATS (JetStream) instances,
// each with its own data folder under `dataDir` and its own (non-default) port, so a machine that
// already runs these servers on their usual ports is never disturbed. System services are never
// touched: servers run as plain child processes (Postgres through pg_ctl) and are stopped by us.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { connect, type Socket } from "node:net";
import { delimiter, join, resolve } from "node:path";
import pg from "pg";
import { portIsFree, reservePort } from "./ports.js";
import { pidAlive } from "./process.js";
export { releasePort } from "./ports.js";

export type ServerName = "postgres" | "redis" | "nats";

export interface InfraOptions {
  /** Absolute path; everything lives under it (pg/, redis/, nats/, logs/). */
  dataDir: string;
  /** Fixed ports; those not given are picked with freePort(). */
  ports?: { postgres?: number; redis?: number; nats?: number };
  /** Progress messages; default console.error. */
  log?: (line: string) => void;
  /**
   * Default process.env. SVC_DATABASE_URL / SVC_REDIS_URL / SVC_NATS_URL mean "use the operator's
   * server, start nothing for it".
   */
  env?: NodeJS.ProcessEnv;
  /**
   * Start redis-server / nats-server in their own process group, so a Ctrl-C in the terminal
   * reaches only the parent (which then shuts down in order). Default false: the servers share the
   * parent's process group and die with it on a terminal signal.
   */
  detached?: boolean;
  /** Readiness timeout per server in milliseconds (default 30000). */
  readyTimeoutMs?: number;
}

export interface Infra {
  /** postgres://user@127.0.0.1:port/<db> — a ready database the suite may use. */
  databaseUrl: string;
  /** URL of the 'postgres' maintenance database on the same server (for CREATE DATABASE). */
  adminDatabaseUrl: string;
  /** redis://127.0.0.1:port */
  redisUrl: string;
  /** nats://127.0.0.1:port */
  natsUrl: string;
  /** The data folder everything lives under. */
  dataDir: string;
  /** Ports of the servers this call started (absent for operator-provided servers). */
  ports: { postgres?: number; redis?: number; nats?: number };
  /** Which servers this call started itself (false: operator's server from SVC_*_URL). */
  managed: Record<ServerName, boolean>;
  /** Log file of each managed server. */
  logFiles: Partial<Record<ServerName, string>>;
  /** Process ids of the running managed servers (postgres: the postmaster). */
  pids(): Partial<Record<ServerName, number>>;
  /** Stops only what this call started (fast shutdown); idempotent. */
  stop(): Promise<void>;
  /** Stops one managed server (tests use this to show degraded behaviour). */
  stopServer(name: ServerName): Promise<void>;
  /** Starts a stopped managed server again on the same port and data. */
  startServer(name: ServerName): Promise<void>;
}

export interface Binaries {
  initdb: string;
  pgCtl: string;
  postgres: string;
  redisServer: string;
  natsServer: string;
}

const DEFAULT_READY_TIMEOUT_MS = 30_000;
const DEBIAN_PACKAGES: Record<ServerName, string> = {
  postgres: "postgresql",
  redis: "redis-server",
  nats: "nats-server",
};

// ---------------------------------------------------------------------------------------------
// small helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

function isExecutable(file: string): boolean {
  try {
    const st = statSync(file);
    return st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

function pathDirs(): string[] {
  const fromPath = (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  const extra = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
  return [...new Set([...fromPath, ...extra])];
}

export function findInPath(name: string): string | undefined {
  for (const dir of pathDirs()) {
    const p = join(dir, name);
    if (isExecutable(p)) return p;
  }
  return undefined;
}

function versionKey(v: string): number[] {
  return v.split(/[^0-9]+/).filter(Boolean).map(Number);
}

function compareVersionsDesc(a: string, b: string): number {
  const x = versionKey(a);
  const y = versionKey(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (y[i] ?? 0) - (x[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

interface PgBinaries {
  initdb: string;
  pgCtl: string;
  postgres: string;
}

function findPostgres(): PgBinaries | undefined {
  const dirs: string[] = [];
  for (const dir of pathDirs()) if (isExecutable(join(dir, "initdb"))) dirs.push(dir);
  try {
    const versions = readdirSync("/usr/lib/postgresql").sort(compareVersionsDesc);
    for (const v of versions) dirs.push(join("/usr/lib/postgresql", v, "bin"));
  } catch {
    /* not installed there */
  }
  for (const dir of dirs) {
    const b = { initdb: join(dir, "initdb"), pgCtl: join(dir, "pg_ctl"), postgres: join(dir, "postgres") };
    if (isExecutable(b.initdb) && isExecutable(b.pgCtl) && isExecutable(b.postgres)) return b;
  }
  return undefined;
}

function findBinaries(): Partial<Binaries> {
  const pgBins = findPostgres();
  return {
    ...(pgBins ?? {}),
    redisServer: findInPath("redis-server"),
    natsServer: findInPath("nats-server"),
  };
}

function missingServers(b: Partial<Binaries>, need: readonly ServerName[]): ServerName[] {
  return need.filter((n) =>
    n === "postgres" ? !(b.initdb && b.pgCtl && b.postgres) : n === "redis" ? !b.redisServer : !b.natsServer,
  );
}

/** Runs a command, forwarding its output lines to `log`; resolves with the exit code. */
function runLogged(cmd: string, args: string[], log: (l: string) => void, prefix: string, env?: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: env ?? process.env });
    const forward = (buf: Buffer) => {
      for (const line of buf.toString("utf8").split(/\r?\n/)) if (line.trim()) log(`${prefix}${line}`);
    };
    child.stdout?.on("data", forward);
    child.stderr?.on("data", forward);
    child.on("error", reject);
    child.on("close", (code) => resolvePromise(code ?? 1));
  });
}

let aptUpdated: Promise<void> | undefined;
let installing: Promise<void> | undefined;

/** `apt-get update`, once per process (root, or `sudo -n`). */
export function updateAptLists(log: (l: string) => void): Promise<void> {
  const asAdmin = (cmd: string, args: string[]): [string, string[]] => (isRoot() ? [cmd, args] : ["sudo", ["-n", cmd, ...args]]);
  aptUpdated ??= (async () => {
    log("[infra] apt-get update");
    const [c, a] = asAdmin("apt-get", ["update"]);
    const code = await runLogged(c, a, () => {}, "", { ...process.env, DEBIAN_FRONTEND: "noninteractive" });
    if (code !== 0) {
      aptUpdated = undefined;
      throw new Error(`apt-get update failed with exit code ${code}`);
    }
  })();
  return aptUpdated;
}

async function installPackages(packages: string[], log: (l: string) => void): Promise<void> {
  const root = isRoot();
  let sudo = false;
  if (!root) {
    const probe = spawnSync("sudo", ["-n", "true"], { stdio: "ignore" });
    sudo = probe.status === 0;
  }
  const hasApt = isExecutable("/usr/bin/apt-get") || !!findInPath("apt-get");
  if ((!root && !sudo) || !hasApt) {
    const why = !hasApt ? "apt-get is not available on this machine" : "not running as root and `sudo -n` is not allowed";
    throw new Error(
      `Missing local servers for the suite (${why}). Install these Debian packages and retry:\n` +
        `  sudo apt-get install -y ${packages.join(" ")}\n` +
        `(or point SVC_DATABASE_URL / SVC_REDIS_URL / SVC_NATS_URL at servers you already run).`,
    );
  }
  const asAdmin = (cmd: string, args: string[]): [string, string[]] => (root ? [cmd, args] : ["sudo", ["-n", cmd, ...args]]);
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const policy = "/usr/sbin/policy-rc.d";
  let wrotePolicy = false;
  try {
    // Keep the packages' post-install scripts from starting system daemons on the default ports.
    if (!existsSync(policy)) {
      const script = "#!/bin/sh\n# written by @svc/infra for the duration of a package install\nexit 101\n";
      if (root) {
        writeFileSync(policy, script, { mode: 0o755 });
      } else {
        const r = spawnSync("sudo", ["-n", "sh", "-c", `printf '%s' "$1" > ${policy} && chmod 755 ${policy}`, "sh", script]);
        if (r.status !== 0) throw new Error(`could not write ${policy}: ${r.stderr?.toString() ?? ""}`);
      }
      wrotePolicy = true;
    }
    await updateAptLists(log);
    log(`[infra] installing ${packages.join(" ")} (apt-get, services are not started)`);
    const [c, a] = asAdmin(root ? "apt-get" : "env", root
      ? ["install", "-y", ...packages]
      : ["DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", ...packages]);
    const tail: string[] = [];
    const code = await runLogged(c, a, (l) => {
      tail.push(l);
      if (tail.length > 20) tail.shift();
    }, "", aptEnv);
    if (code !== 0) {
      throw new Error(`apt-get install ${packages.join(" ")} failed with exit code ${code}:\n${tail.join("\n")}`);
    }
  } finally {
    if (wrotePolicy) {
      if (root) rmSync(policy, { force: true });
      else spawnSync("sudo", ["-n", "rm", "-f", policy], { stdio: "ignore" });
    }
  }
}

async function ensureSome(need: readonly ServerName[], log: (l: string) => void): Promise<Partial<Binaries>> {
  let found = findBinaries();
  let missing = missingServers(found, need);
  if (missing.length === 0) return found;
  // Only one install at a time in this process.
  while (installing) await installing.catch(() => {});
  found = findBinaries();
  missing = missingServers(found, need);
  if (missing.length === 0) return found;
  const packages = missing.map((m) => DEBIAN_PACKAGES[m]);
  installing = installPackages(packages, log);
  try {
    await installing;
  } finally {
    installing = undefined;
  }
  found = findBinaries();
  missing = missingServers(found, need);
  if (missing.length > 0) {
    throw new Error(
      `Still missing after install: ${missing.join(", ")}. Install the Debian packages ` +
        `${missing.map((m) => DEBIAN_PACKAGES[m]).join(" ")} manually.`,
    );
  }
  return found;
}

/**
 * Finds the Postgres, Redis and NATS server binaries; installs the missing Debian packages
 * (root, or `sudo -n`) without letting their post-install start system daemons.
 */
export async function ensureBinaries(log: (line: string) => void = (l) => console.error(l)): Promise<Binaries> {
  const b = await ensureSome(["postgres", "redis", "nats"], log);
  return {
    initdb: b.initdb ?? "",
    pgCtl: b.pgCtl ?? "",
    postgres: b.postgres ?? "",
    redisServer: b.redisServer ?? "",
    natsServer: b.natsServer ?? "",
  };
}

/**
 * A TCP port on 127.0.0.1 that is free and reserved for this process, so that no other run of
 * this project on the machine picks it too (see ports.ts).
 */
export function freePort(): Promise<number> {
  return reservePort();
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(db)}`;
  return u.toString();
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** CREATE DATABASE `name` (dropping it first if it exists); returns its URL. */
export async function createDatabase(adminDatabaseUrl: string, name: string): Promise<string> {
  await withClient(adminDatabaseUrl, async (c) => {
    try {
      await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    } catch (err) {
      // Servers before 13 have no WITH (FORCE).
      if ((err as { code?: string }).code !== "42601") throw err;
      await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
    }
    await c.query(`CREATE DATABASE ${quoteIdent(name)}`);
  });
  return withDatabase(adminDatabaseUrl, name);
}

function tailOf(file: string, lines = 30): string {
  try {
    const text = readFileSync(file, "utf8");
    return text.split(/\r?\n/).filter((l) => l.length > 0).slice(-lines).join("\n");
  } catch {
    return "(no log output)";
  }
}


function procCmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return undefined;
  }
}

function procCwd(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

function samePath(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return resolve(p);
    }
  };
  return real(a) === real(b);
}

function readPidFile(file: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(file, "utf8").split(/\s+/)[0] ?? "", 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Waits until 127.0.0.1:port answers: `probe` gets the connected socket and decides. */
function probeTcp(port: number, probe: (sock: Socket, done: (ok: boolean) => void) => void, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolvePromise) => {
    let settled = false;
    const sock = connect({ host: "127.0.0.1", port });
    const finish = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolvePromise(ok);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    sock.on("error", () => finish(false));
    sock.on("close", () => finish(false));
    sock.on("connect", () => probe(sock, finish));
  });
}

/** Sends a raw PING to Redis on 127.0.0.1:port; true on +PONG. */
export function redisPing(port: number, timeoutMs = 1000): Promise<boolean> {
  return probeTcp(port, (sock, done) => {
    let buf = "";
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG"));
    });
    sock.write("PING\r\n");
  }, timeoutMs);
}

/** Connects to NATS on 127.0.0.1:port; true when the server greets with INFO. */
export function natsInfo(port: number, timeoutMs = 1000): Promise<boolean> {
  return probeTcp(port, (sock, done) => {
    let buf = "";
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      if (buf.includes("\r\n")) done(buf.startsWith("INFO "));
    });
  }, timeoutMs);
}

// ---------------------------------------------------------------------------------------------
// Postgres

interface PgState {
  bins: PgBinaries;
  /** Folder owned by the user running postgres: data/, run/ (socket). */
  home: string;
  data: string;
  sockDir: string | undefined;
  user: string | undefined; // set when we are root
  logFile: string;
  port: number;
  running: boolean;
}

function userExists(name: string): boolean {
  return spawnSync("id", ["-u", name], { stdio: "ignore" }).status === 0;
}

function pgSystemUser(log: (l: string) => void): string {
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
function preparePgHome(dataDir: string, user: string | undefined, log: (l: string) => void): string {
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

function runPg(st: PgState, cmd: string, args: string[], logFd?: number, timeoutMs = 60_000): Promise<{ code: number; output: string }> {
  const [c, a] = asPgUser(st, cmd, args);
  return new Promise((resolvePromise, reject) => {
    const opts: SpawnOptions = {
      cwd: st.home,
      env: { ...process.env, LC_ALL: "C", LANG: "C" },
      stdio: ["ignore", logFd ?? "pipe", logFd ?? "pipe"],
    };
    const child = spawn(c, a, opts);
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

function openLog(file: string, what: string): number {
  const fd = openSync(file, "a", 0o644);
  writeSync(fd, `\n===== ${what} ${new Date().toISOString()} =====\n`);
  return fd;
}

function postmasterPid(st: PgState): number | undefined {
  return readPidFile(join(st.data, "postmaster.pid"));
}

async function pgStatusRunning(st: PgState): Promise<boolean> {
  if (!existsSync(join(st.data, "postmaster.pid"))) return false;
  const r = await runPg(st, st.bins.pgCtl, ["status", "-D", st.data]);
  return r.code === 0;
}

async function pgPrepare(st: PgState, log: (l: string) => void): Promise<void> {
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
}

async function pgStart(st: PgState, timeoutMs: number): Promise<void> {
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
  const url = `postgres://postgres@127.0.0.1:${st.port}/postgres`;
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

async function pgStop(st: PgState, mode: "fast" | "immediate" = "fast"): Promise<void> {
  if (!st.running && !(await pgStatusRunning(st))) return;
  const fd = openLog(st.logFile, `pg_ctl stop -m ${mode}`);
  try {
    await runPg(st, st.bins.pgCtl, ["stop", "-D", st.data, "-m", mode, "-w", "-t", "30"], fd);
  } finally {
    closeSync(fd);
  }
  st.running = false;
}

function pgStopImmediateSync(st: PgState): void {
  const [c, a] = asPgUser(st, st.bins.pgCtl, ["stop", "-D", st.data, "-m", "immediate", "-w", "-t", "10"]);
  spawnSync(c, a, { stdio: "ignore", cwd: st.home, timeout: 15_000 });
  st.running = false;
}

// ---------------------------------------------------------------------------------------------
// Redis and NATS (plain child processes)

interface ChildState {
  name: "redis" | "nats";
  bin: string;
  port: number;
  dir: string;
  logFile: string;
  pidFile: string;
  child: ChildProcess | undefined;
  exited: Promise<void> | undefined;
}

function childArgs(st: ChildState): string[] {
  if (st.name === "redis") {
    return [
      "--port", String(st.port),
      "--bind", "127.0.0.1",
      "--dir", st.dir,
      "--appendonly", "yes",
      "--save", "",
      // Test suites each take a database of their own (test-e2e/suite.ts).
      "--databases", "1024",
      "--daemonize", "no",
      "--protected-mode", "no",
    ];
  }
  return ["-a", "127.0.0.1", "-p", String(st.port), "-js", "-sd", st.dir, "-n", "svc-local"];
}

/** Kills a server of ours left over from a crashed earlier run (same data folder). */
async function killStale(st: ChildState, log: (l: string) => void): Promise<void> {
  const pid = readPidFile(st.pidFile);
  if (pid === undefined) return;
  // redis-server rewrites its process title; both servers run with their data folder as cwd.
  const cwd = procCwd(pid);
  const cmd = procCmdline(pid) ?? "";
  const ours = pidAlive(pid) && ((cwd !== undefined && samePath(cwd, st.dir)) || cmd.includes(st.dir)) && cmd.includes(st.name === "redis" ? "redis" : "nats");
  if (ours) {
    log(`[infra] stopping ${st.name} (pid ${pid}) left over from a previous run`);
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      /* gone */
    }
    const deadline = Date.now() + 5000;
    while (pidAlive(pid) && Date.now() < deadline) await sleep(100);
    if (pidAlive(pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone */
      }
      while (pidAlive(pid)) await sleep(50);
    }
  }
  rmSync(st.pidFile, { force: true });
}

async function childStart(st: ChildState, detached: boolean, timeoutMs: number): Promise<void> {
  mkdirSync(st.dir, { recursive: true });
  const fd = openLog(st.logFile, `${st.name} start (port ${st.port})`);
  const logStart = statSync(st.logFile).size;
  let child: ChildProcess;
  try {
    child = spawn(st.bin, childArgs(st), { cwd: st.dir, stdio: ["ignore", fd, fd], detached, env: process.env });
  } finally {
    closeSync(fd);
  }
  let exitInfo: string | undefined;
  st.child = child;
  st.exited = new Promise<void>((r) => {
    child.once("exit", (code, signal) => {
      exitInfo = signal ? `signal ${signal}` : `exit code ${code}`;
      if (st.child === child) st.child = undefined;
      r();
    });
  });
  child.once("error", (err) => {
    exitInfo = err.message;
  });
  if (child.pid !== undefined) writeFileSync(st.pidFile, `${child.pid}\n`);
  const deadline = Date.now() + timeoutMs;
  const newLog = () => {
    try {
      return readFileSync(st.logFile, "utf8").slice(logStart);
    } catch {
      return "";
    }
  };
  for (;;) {
    if (exitInfo !== undefined) {
      st.child = undefined;
      rmSync(st.pidFile, { force: true });
      throw new Error(`${st.name} exited during start-up (${exitInfo}) on 127.0.0.1:${st.port}. Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
    }
    const ok = st.name === "redis"
      ? await redisPing(st.port)
      : /Server is ready/.test(newLog()) && (await natsInfo(st.port));
    if (ok && exitInfo === undefined) return;
    if (Date.now() > deadline) {
      await childStop(st);
      throw new Error(`${st.name} was not ready on 127.0.0.1:${st.port} after ${Math.round(timeoutMs / 1000)} s. Tail of ${st.logFile}:\n${tailOf(st.logFile)}`);
    }
    await sleep(100);
  }
}

async function childStop(st: ChildState): Promise<void> {
  const child = st.child;
  if (!child || !st.exited) return;
  try {
    child.kill("SIGTERM");
  } catch {
    /* gone */
  }
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    st.exited.then(() => true),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 10_000))),
  ]);
  clearTimeout(timer);
  if (!done) {
    try {
      child.kill("SIGKILL");
    } catch {
      /* gone */
    }
    await st.exited;
  }
  st.child = undefined;
  rmSync(st.pidFile, { force: true });
}

// ---------------------------------------------------------------------------------------------
// process exit / fatal signal cleanup, shared by all Infra instances of this process

const cleanups = new Set<() => void>();
const FATAL_SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

function runCleanups(): void {
  for (const fn of [...cleanups]) {
    cleanups.delete(fn);
    try {
      fn();
    } catch {
      /* best effort */
    }
  }
}

function onProcessExit(): void {
  runCleanups();
}

// On a fatal signal nobody else handles, clean up and die by that signal as before. When the host
// program has its own handler, it is responsible for calling stop().
function onFatalSignal(sig: NodeJS.Signals): void {
  if (process.listenerCount(sig) > 1) return;
  runCleanups();
  uninstallHandlers();
  process.kill(process.pid, sig);
}

function installHandlers(): void {
  process.on("exit", onProcessExit);
  for (const s of FATAL_SIGNALS) process.on(s, onFatalSignal);
}

function uninstallHandlers(): void {
  process.removeListener("exit", onProcessExit);
  for (const s of FATAL_SIGNALS) process.removeListener(s, onFatalSignal);
}

function registerCleanup(fn: () => void): void {
  if (cleanups.size === 0) installHandlers();
  cleanups.add(fn);
}

function unregisterCleanup(fn: () => void): void {
  if (!cleanups.delete(fn)) return;
  if (cleanups.size === 0) uninstallHandlers();
}

// ---------------------------------------------------------------------------------------------
// data folder lock: one startInfra per data folder at a time

function acquireLock(dataDir: string): string {
  const lock = join(dataDir, "infra.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: "wx" });
      return lock;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const pid = readPidFile(lock);
      if (pid !== undefined && pid !== process.pid && pidAlive(pid)) {
        throw new Error(`The data folder ${dataDir} is in use by process ${pid} (${lock}). Stop it first or use another data folder.`);
      }
      if (pid === process.pid) throw new Error(`startInfra is already running on ${dataDir} in this process`);
      rmSync(lock, { force: true });
    }
  }
  throw new Error(`could not lock ${lock}`);
}

// ---------------------------------------------------------------------------------------------

/**
 * Starts (or reuses the operator's) Postgres, Redis and NATS. Servers named by SVC_DATABASE_URL,
 * SVC_REDIS_URL, SVC_NATS_URL in `env` are used as they are; the others are started as our own
 * instances under `dataDir` on 127.0.0.1.
 */
export async function startInfra(opts: InfraOptions): Promise<Infra> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const env = opts.env ?? process.env;
  const timeoutMs = opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  const dataDir = resolve(opts.dataDir);
  const external = {
    postgres: env.SVC_DATABASE_URL || undefined,
    redis: env.SVC_REDIS_URL || undefined,
    nats: env.SVC_NATS_URL || undefined,
  };
  const need = (["postgres", "redis", "nats"] as const).filter((n) => !external[n]);
  const managed: Record<ServerName, boolean> = { postgres: !external.postgres, redis: !external.redis, nats: !external.nats };

  mkdirSync(join(dataDir, "logs"), { recursive: true });
  const lockFile = need.length > 0 ? acquireLock(dataDir) : undefined;

  let pgState: PgState | undefined;
  const children: Partial<Record<"redis" | "nats", ChildState>> = {};
  let stopped = false;
  let stopping: Promise<void> | undefined;

  // Last-resort cleanup: a crashed or exiting parent leaves no servers behind.
  const cleanupSync = () => {
    for (const st of Object.values(children)) {
      if (st?.child?.pid !== undefined) {
        try {
          process.kill(st.child.pid, "SIGKILL");
        } catch {
          /* gone */
        }
        rmSync(st.pidFile, { force: true });
      }
    }
    if (pgState?.running) pgStopImmediateSync(pgState);
    if (lockFile) rmSync(lockFile, { force: true });
  };
  registerCleanup(cleanupSync);
  const removeHandlers = () => unregisterCleanup(cleanupSync);

  const stopAll = async () => {
    await Promise.all(Object.values(children).map((st) => (st ? childStop(st) : undefined)));
    if (pgState) await pgStop(pgState, "fast").catch((err) => log(`[infra] postgres stop: ${(err as Error).message}`));
    if (lockFile) rmSync(lockFile, { force: true });
    removeHandlers();
    stopped = true;
  };

  try {
    const bins = need.length > 0 ? await ensureSome(need, log) : {};
    // A reserved port is never handed out twice while it is held (ports.ts).
    const pickPort = async (fixed: number | undefined): Promise<{ port: number; fixed: boolean }> =>
      fixed !== undefined ? { port: fixed, fixed: true } : { port: await freePort(), fixed: false };
    /** True when the port is free; a picked port taken meanwhile gives false (pick again). */
    const portReady = async (name: ServerName, port: number, fixed: boolean, attempt: number): Promise<boolean> => {
      if (await portIsFree(port)) return true;
      if (!fixed && attempt < 5) return false;
      const envName = name === "postgres" ? "SVC_PG_PORT" : name === "redis" ? "SVC_REDIS_PORT" : "SVC_NATS_PORT";
      throw new Error(
        `Port ${port} on 127.0.0.1 (for our ${name}) is already in use by another process. ` +
          `Choose another port (${envName}) or stop that process.`,
      );
    };
    const inUse = (e: unknown) => /address already in use|EADDRINUSE|could not bind|could not create listen socket/i.test((e as Error).message);

    // Postgres
    if (managed.postgres) {
      const pgBins = { initdb: bins.initdb ?? "", pgCtl: bins.pgCtl ?? "", postgres: bins.postgres ?? "" };
      const user = isRoot() ? pgSystemUser(log) : undefined;
      const home = preparePgHome(dataDir, user, log);
      const { port, fixed } = await pickPort(opts.ports?.postgres);
      const st: PgState = {
        bins: pgBins,
        home,
        data: join(home, "data"),
        sockDir: join(home, "run"),
        user,
        logFile: join(dataDir, "logs", "postgres.log"),
        port,
        running: false,
      };
      pgState = st;
      await pgPrepare(st, log);
      for (let attempt = 0; ; attempt++) {
        if (!(await portReady("postgres", st.port, fixed, attempt))) {
          st.port = (await pickPort(undefined)).port;
          continue;
        }
        try {
          await pgStart(st, timeoutMs);
          break;
        } catch (err) {
          if (fixed || attempt >= 2 || !inUse(err)) throw err;
          st.port = (await pickPort(undefined)).port;
        }
      }
      await withClient(`postgres://postgres@127.0.0.1:${st.port}/postgres`, async (c) => {
        const r = await c.query("select 1 from pg_database where datname = 'svc'");
        if (r.rowCount === 0) await c.query("create database svc");
      });
      log(`[infra] postgres ready on 127.0.0.1:${st.port} (data ${st.data})`);
    }

    // Redis and NATS
    for (const name of ["redis", "nats"] as const) {
      if (!managed[name]) continue;
      const bin = name === "redis" ? bins.redisServer : bins.natsServer;
      const { port, fixed } = await pickPort(opts.ports?.[name]);
      const st: ChildState = {
        name,
        bin: bin ?? "",
        port,
        dir: join(dataDir, name),
        logFile: join(dataDir, "logs", `${name}.log`),
        pidFile: join(dataDir, `${name}.pid`),
        child: undefined,
        exited: undefined,
      };
      children[name] = st;
      await killStale(st, log);
      for (let attempt = 0; ; attempt++) {
        if (!(await portReady(name, st.port, fixed, attempt))) {
          st.port = (await pickPort(undefined)).port;
          continue;
        }
        try {
          await childStart(st, opts.detached ?? false, timeoutMs);
          break;
        } catch (err) {
          if (fixed || attempt >= 2 || !inUse(err)) throw err;
          st.port = (await pickPort(undefined)).port;
        }
      }
      log(`[infra] ${name} ready on 127.0.0.1:${st.port} (data ${st.dir})`);
    }
  } catch (err) {
    await stopAll().catch(() => {});
    throw err;
  }

  const pgPort = pgState?.port;
  const databaseUrl = external.postgres ?? `postgres://postgres@127.0.0.1:${pgPort}/svc`;
  const adminDatabaseUrl = external.postgres
    ? withDatabase(external.postgres, "postgres")
    : `postgres://postgres@127.0.0.1:${pgPort}/postgres`;

  const requireManaged = (name: ServerName) => {
    if (!managed[name]) throw new Error(`${name} is the operator's server (SVC_*_URL); this process did not start it`);
    if (stopped) throw new Error("infra is stopped");
  };

  const ports: Infra["ports"] = {};
  if (pgState) ports.postgres = pgState.port;
  if (children.redis) ports.redis = children.redis.port;
  if (children.nats) ports.nats = children.nats.port;
  const logFiles: Infra["logFiles"] = {};
  if (pgState) logFiles.postgres = pgState.logFile;
  if (children.redis) logFiles.redis = children.redis.logFile;
  if (children.nats) logFiles.nats = children.nats.logFile;

  return {
    databaseUrl,
    adminDatabaseUrl,
    redisUrl: external.redis ?? `redis://127.0.0.1:${children.redis?.port}`,
    natsUrl: external.nats ?? `nats://127.0.0.1:${children.nats?.port}`,
    dataDir,
    ports,
    managed,
    logFiles,
    pids() {
      const out: Partial<Record<ServerName, number>> = {};
      const pgPid = pgState?.running ? postmasterPid(pgState) : undefined;
      if (pgPid !== undefined) out.postgres = pgPid;
      if (children.redis?.child?.pid !== undefined) out.redis = children.redis.child.pid;
      if (children.nats?.child?.pid !== undefined) out.nats = children.nats.child.pid;
      return out;
    },
    stop() {
      stopping ??= stopAll();
      return stopping;
    },
    async stopServer(name) {
      requireManaged(name);
      if (name === "postgres") {
        if (pgState) await pgStop(pgState, "fast");
        return;
      }
      const st = children[name];
      if (st) await childStop(st);
      log(`[infra] ${name} stopped`);
    },
    async startServer(name) {
      requireManaged(name);
      if (name === "postgres") {
        if (pgState && !pgState.running) {
          await pgStart(pgState, timeoutMs);
          log(`[infra] postgres started again on 127.0.0.1:${pgState.port}`);
        }
        return;
      }
      const st = children[name];
      if (st && !st.child) {
        await childStart(st, opts.detached ?? false, timeoutMs);
        log(`[infra] ${name} started again on 127.0.0.1:${st.port}`);
      }
    },
  };
}
