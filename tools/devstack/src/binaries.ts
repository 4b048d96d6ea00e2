// Finds the Postgres, Redis and NATS server binaries, and installs the Debian packages of those
// missing (root, or `sudo -n`) without letting their post-install scripts start system daemons.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";

export type ServerName = "postgres" | "redis" | "nats";

export interface Binaries {
  initdb: string;
  pgCtl: string;
  postgres: string;
  redisServer: string;
  natsServer: string;
}

const DEBIAN_PACKAGES: Record<ServerName, string> = {
  postgres: "postgresql",
  redis: "redis-server",
  nats: "nats-server",
};


export const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

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

export interface PgBinaries {
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

/**
 * How long apt-get waits for another apt-get or dpkg of this machine (another test process's
 * install, the machine's own updates) to let go of its lock, instead of failing at once.
 */
const APT_LOCK_WAIT_S = 600;

/** `apt-get update`, once per process (root, or `sudo -n`). */
export function updateAptLists(log: (l: string) => void): Promise<void> {
  const asAdmin = (cmd: string, args: string[]): [string, string[]] => (isRoot() ? [cmd, args] : ["sudo", ["-n", cmd, ...args]]);
  aptUpdated ??= (async () => {
    log("[infra] apt-get update");
    const [c, a] = asAdmin("apt-get", ["-o", `DPkg::Lock::Timeout=${APT_LOCK_WAIT_S}`, "update"]);
    const code = await runLogged(c, a, () => {}, "", { ...process.env, DEBIAN_FRONTEND: "noninteractive" });
    if (code !== 0) {
      aptUpdated = undefined;
      throw new Error(`apt-get update failed with exit code ${code}`);
    }
  })();
  return aptUpdated;
}

export async function installPackages(packages: string[], log: (l: string) => void): Promise<void> {
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
      const script = "#!/bin/sh\n# written by @svc/devstack for the duration of a package install\nexit 101\n";
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
      ? ["-o", `DPkg::Lock::Timeout=${APT_LOCK_WAIT_S}`, "install", "-y", ...packages]
      : ["DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", `DPkg::Lock::Timeout=${APT_LOCK_WAIT_S}`, "install", "-y", ...packages]);
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

/** Debian packages not installed on this machine (dpkg's view). */
function notInstalled(packages: readonly string[]): string[] {
  return packages.filter((p) => {
    const r = spawnSync("dpkg-query", ["-W", "-f=${Status}", p], { encoding: "utf8" });
    return r.status !== 0 || !r.stdout.includes("install ok installed");
  });
}

/**
 * Installs those of `packages` that are missing, as the servers' packages are (root or `sudo -n`,
 * no daemon started); one install at a time in this process. For test clients (Maven, ...).
 */
export async function ensureDebianPackages(packages: readonly string[], log: (l: string) => void = (l) => console.error(l)): Promise<void> {
  while (installing) await installing.catch(() => {});
  const missing = notInstalled(packages);
  if (missing.length === 0) return;
  installing = installPackages(missing, log);
  try {
    await installing;
  } finally {
    installing = undefined;
  }
  const still = notInstalled(missing);
  if (still.length > 0) throw new Error(`Still missing after install: ${still.join(" ")}`);
}

export async function ensureSome(need: readonly ServerName[], log: (l: string) => void): Promise<Partial<Binaries>> {
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


/** Where Debian's Chromium lives: the console's browser tests drive it (never a downloaded browser). */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Debian's Chromium for the console's browser tests: found on the machine, else installed from
 * Debian like the servers above (root, or `sudo -n`). Only the test run asks for it.
 */
export async function ensureChromium(log: (line: string) => void = (l) => console.error(l)): Promise<string> {
  const find = () => (isExecutable(CHROMIUM) ? CHROMIUM : findInPath("chromium"));
  const found = find();
  if (found) return found;
  while (installing) await installing.catch(() => {});
  if (find()) return find()!;
  installing = installPackages(["chromium"], log);
  try {
    await installing;
  } finally {
    installing = undefined;
  }
  const installed = find();
  if (!installed) throw new Error("Chromium is still missing after `apt-get install -y chromium`: install the Debian package chromium manually.");
  return installed;
}
