// `npm start`: the whole suite in the foreground, in one command.
//
// Starts our own Postgres, Redis and NATS (packages/infra) under the data folder, keeps the
// internal secret and a bootstrap key there, then runs every service (services/*/src/main.ts) as
// its own process, gateway last, with their output prefixed by the service name. Ctrl-C or
// SIGTERM stops the services (SIGTERM, SIGKILL after 10 s), then the servers; a second Ctrl-C
// kills everything at once.
//
// Environment: SVC_DATA_DIR (default <repo>/.data/local), SVC_PG_PORT / SVC_REDIS_PORT /
// SVC_NATS_PORT (55432 / 56379 / 54222), SVC_DATABASE_URL / SVC_REDIS_URL / SVC_NATS_URL (use
// the operator's server instead), SVC_PORT (gateway, 8080), SVC_HOST, SVC_TENANT,
// SVC_INTERNAL_SECRET, SVC_BOOTSTRAP_KEY, SVC_FILESYSTEM_ROOT. `-Dsvc.x=y` arguments are passed to
// every service.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { startInfra, type Infra } from "../packages/infra/src/index.js";
import { SERVICE_NODE_OPTIONS } from "../packages/infra/src/runtime.js";
import { pidAlive } from "../packages/infra/src/process.js";
import { makeKey, parseKey } from "../packages/keys/src/index.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const servicesDir = join(repoRoot, "services");

const START_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;
const KNOWN_PORTS: Record<string, number> = { auth: 18081, artifacts: 18082, admin: 18083 };
const FIRST_EXTRA_PORT = 18084;

// ---------------------------------------------------------------------------------------------
// output

const tty = process.stdout.isTTY === true;
const ESC = "\u001b[";
const paint = (code: string, s: string) => (tty ? `${ESC}${code}m${s}${ESC}0m` : s);
const PALETTE = ["36", "35", "33", "34", "32", "96", "95", "93", "94", "92"];
const colours = new Map<string, string>();
let prefixWidth = 8;

function prefix(name: string): string {
  const padded = name.padEnd(prefixWidth);
  if (!tty) return `${padded} | `;
  if (!colours.has(name)) colours.set(name, name === "suite" || name === "infra" ? "90" : PALETTE[colours.size % PALETTE.length] ?? "36");
  return `${paint(colours.get(name) ?? "36", padded)} ${paint("90", "│")} `;
}

function out(name: string, line: string, stream: NodeJS.WriteStream = process.stdout): void {
  stream.write(`${prefix(name)}${line}\n`);
}

// A closed terminal or pipe (`npm start | head`) must not crash the supervisor mid-shutdown.
for (const s of [process.stdout, process.stderr]) s.on("error", () => {});

const say = (line: string) => out("suite", line);
const warn = (line: string) => out("suite", tty ? paint("33", line) : line, process.stderr);

const LEVELS: Record<number, [string, string]> = {
  10: ["TRACE", "90"],
  20: ["DEBUG", "34"],
  30: ["INFO ", "32"],
  40: ["WARN ", "33"],
  50: ["ERROR", "31"],
  60: ["FATAL", "41;97"],
};
const LEVEL_NAMES: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

function clock(time: unknown): string {
  const d = typeof time === "number" || typeof time === "string" ? new Date(time) : new Date();
  if (Number.isNaN(d.getTime())) return String(time);
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function compact(value: unknown): string {
  if (typeof value === "string") return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A pino JSON line made readable for a terminal; undefined when the line is not pino JSON. */
function prettyPino(service: string, line: string): string | undefined {
  if (!line.startsWith("{")) return undefined;
  let obj: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
    obj = parsed as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const { level, time, msg, pid: _pid, hostname: _hostname, v: _v, service: svc, err, ...rest } = obj;
  const levelNo = typeof level === "number" ? level : typeof level === "string" ? LEVEL_NAMES[level.toLowerCase()] : undefined;
  if (levelNo === undefined) return undefined;
  const [label, colour] = LEVELS[levelNo] ?? [String(level).toUpperCase().padEnd(5), "0"];
  const parts = [paint("90", clock(time)), paint(colour, label), paint(levelNo >= 50 ? "31" : "0", typeof msg === "string" ? msg : compact(msg ?? ""))];
  if (svc !== undefined && svc !== service) rest.service = svc;
  const fields = Object.entries(rest).map(([k, v]) => `${paint("90", `${k}=`)}${compact(v)}`);
  if (fields.length) parts.push(fields.join(" "));
  let text = parts.filter((p) => p !== "").join(" ");
  if (err !== undefined) {
    const e = err as { type?: unknown; message?: unknown; stack?: unknown };
    if (typeof e === "object" && e !== null && typeof e.stack === "string") {
      text += `\n${e.stack.split("\n").map((l) => `    ${l}`).join("\n")}`;
    } else {
      text += ` ${paint("90", "err=")}${compact(err)}`;
    }
  }
  return text;
}

function pipeOutput(name: string, stream: NodeJS.ReadableStream | null, target: NodeJS.WriteStream): void {
  if (!stream) return;
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  rl.on("line", (line) => {
    const pretty = tty ? prettyPino(name, line) : undefined;
    if (pretty === undefined) {
      out(name, line, target);
      return;
    }
    const [first, ...more] = pretty.split("\n");
    out(name, first ?? "", target);
    for (const l of more) out(name, l, target);
  });
}

// ---------------------------------------------------------------------------------------------
// settings: a -Dsvc.x=y argument wins over SVC_X env, as in the services

prefixWidth = (() => {
  try {
    return Math.max(5, ...readdirSync(servicesDir).map((n) => n.length));
  } catch {
    return 5;
  }
})();

const args = process.argv.slice(2);
const dArgs: string[] = [];
const props = new Map<string, string>();
for (const a of args) {
  if (a.startsWith("-D")) {
    const eq = a.indexOf("=");
    const key = eq < 0 ? a.slice(2) : a.slice(2, eq);
    props.set(key, eq < 0 ? "true" : a.slice(eq + 1));
    // One -Dsvc.port for every process would put them all on the same port: it is the gateway's.
    if (key !== "svc.port") dArgs.push(a);
  } else {
    warn(`ignoring argument ${JSON.stringify(a)} (only -Dsvc.name=value arguments are passed to the services)`);
  }
}
const envName = (setting: string) => setting.toUpperCase().replace(/[.-]/g, "_");
const setting = (name: string): string | undefined => {
  const v = props.get(name) ?? process.env[envName(name)];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
};
const fromDArg = (name: string) => props.has(name);

function portFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    warn(`${name}=${raw} is not a port number (1-65535)`);
    process.exit(2);
  }
  return n;
}

const dataDir = resolve(process.env.SVC_DATA_DIR?.trim() || join(repoRoot, ".data", "local"));
const tenant = setting("svc.tenant") ?? "default";
const userHost = setting("svc.host");
const bindHost = userHost ?? "127.0.0.1";
/** Where the services can be reached from here (a wildcard bind address is not one). */
const reachHost = (() => {
  const h = bindHost.replace(/^\[|\]$/g, "");
  if (h === "0.0.0.0" || h === "::" || h === "") return "127.0.0.1";
  return h.includes(":") ? `[${h}]` : h;
})();
const gatewayPort = (() => {
  const raw = setting("svc.port");
  if (raw === undefined) return 8080;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    warn(`svc.port=${raw} is not a port number (1-65535)`);
    process.exit(2);
  }
  return n;
})();
const gatewayUrl = `http://${reachHost}:${gatewayPort}`;

// ---------------------------------------------------------------------------------------------
// secrets kept in the data folder

function writeSecret(file: string, value: string): void {
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

function readSecret(file: string): string | undefined {
  try {
    const v = readFileSync(file, "utf8").trim();
    return v === "" ? undefined : v;
  } catch {
    return undefined;
  }
}

function internalSecret(): string | undefined {
  if (setting("svc.internal-secret")) return undefined; // the user's, the services read it themselves
  const file = join(dataDir, "internal-secret");
  let secret = readSecret(file);
  if (!secret) {
    secret = randomBytes(32).toString("base64url");
    writeSecret(file, secret);
  } else {
    chmodSync(file, 0o600);
  }
  return secret;
}

function keyTenant(key: string): string | undefined {
  const p = parseKey(key);
  return p.ok ? p.key.tenant : undefined;
}

/** The bootstrap key for `tenant`, from <data>/bootstrap-key (made and printed once). */
function bootstrapKey(): string | undefined {
  if (setting("svc.bootstrap-key")) return undefined; // the user's, the services read it themselves
  const file = join(dataDir, "bootstrap-key");
  let key = readSecret(file);
  if (key !== undefined && keyTenant(key) !== tenant) {
    // The tenant changed: park that key under its tenant's name, take this tenant's if parked.
    const old = keyTenant(key);
    renameSync(file, `${file}.${old ?? "invalid"}`);
    const parked = `${file}.${tenant}`;
    key = readSecret(parked);
    if (key !== undefined && keyTenant(key) === tenant) {
      renameSync(parked, file);
    } else {
      key = undefined;
    }
    say(`the bootstrap key in ${file} was for tenant "${old ?? "?"}"; moved it to ${file}.${old ?? "invalid"}`);
  }
  if (key !== undefined) {
    chmodSync(file, 0o600);
    say(`bootstrap key (tenant "${tenant}"): stored in ${file}`);
    return key;
  }
  key = makeKey(tenant);
  writeSecret(file, key);
  const lines = [
    "",
    `New bootstrap key for tenant "${tenant}" (shown only this once; it is stored in ${file}):`,
    "",
    `    ${key}`,
    "",
    "It holds every right. Use it to issue real keys, for example:",
    `    curl -H "Service-Repository-Key: ${key}" ${gatewayUrl}/api/capabilities`,
    "",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  return key;
}

// ---------------------------------------------------------------------------------------------
// services

interface ServiceDef {
  name: string;
  main: string;
  port: number;
}

function discoverServices(): ServiceDef[] {
  let names: string[] = [];
  try {
    names = readdirSync(servicesDir)
      .filter((name) => !name.startsWith(".") && existsSync(join(servicesDir, name, "src", "main.ts")))
      .sort();
  } catch {
    /* no services folder */
  }
  let next = FIRST_EXTRA_PORT;
  const defs = names.map((name): ServiceDef => ({
    name,
    main: join(servicesDir, name, "src", "main.ts"),
    port: name === "gateway" ? gatewayPort : KNOWN_PORTS[name] ?? next++,
  }));
  // gateway last
  return [...defs.filter((d) => d.name !== "gateway"), ...defs.filter((d) => d.name === "gateway")];
}

interface Running {
  def: ServiceDef;
  proc: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: boolean;
}

const running = new Map<string, Running>();
let infra: Infra | undefined;
let infraStarting: Promise<Infra> | undefined;
let stopping = false;
let ready = false;
let lastSignalAt = 0;

const servicesPidFile = () => join(dataDir, "services.pid");

function saveServicePids(): void {
  const list = [...running.values()].filter((r) => !r.exited && r.proc.pid !== undefined).map((r) => ({ name: r.def.name, pid: r.proc.pid, main: r.def.main }));
  try {
    writeFileSync(servicesPidFile(), `${JSON.stringify(list)}\n`);
  } catch {
    /* best effort */
  }
}


const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Services left running by an earlier suite that was killed hard (SIGKILL): stop them. */
async function stopLeftovers(): Promise<void> {
  let list: Array<{ name?: string; pid?: number; main?: string }> = [];
  try {
    list = JSON.parse(readFileSync(servicesPidFile(), "utf8")) as typeof list;
  } catch {
    return;
  }
  for (const e of list) {
    if (typeof e.pid !== "number" || typeof e.main !== "string" || !pidAlive(e.pid)) continue;
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${e.pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (!cmd.includes(e.main)) continue;
    say(`stopping ${e.name ?? "service"} (pid ${e.pid}) left over from a previous run`);
    try {
      process.kill(e.pid, "SIGTERM");
    } catch {
      /* gone */
    }
    const deadline = Date.now() + STOP_GRACE_MS;
    while (pidAlive(e.pid) && Date.now() < deadline) await sleep(100);
    if (pidAlive(e.pid)) {
      try {
        process.kill(e.pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  }
  rmSync(servicesPidFile(), { force: true });
}

function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once("error", () => res(false));
    srv.listen({ port, host: host.replace(/^\[|\]$/g, ""), exclusive: true }, () => srv.close(() => res(true)));
  });
}

class StartFailure extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

function spawnService(def: ServiceDef, env: NodeJS.ProcessEnv): Running {
  const proc = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, "--import", "tsx", def.main, ...dArgs], {
    cwd: repoRoot,
    env: { ...env, SVC_PORT: String(def.port) },
    stdio: ["ignore", "pipe", "pipe"],
    // Own process group: a Ctrl-C in the terminal reaches only the suite, which then stops the
    // services before the servers they use.
    detached: true,
  });
  const r: Running = {
    def,
    proc,
    exited: false,
    exit: new Promise((res) => {
      proc.once("exit", (code, signal) => {
        // Report after the last output lines (the reason for a refusal comes just before exit).
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          r.exited = true;
          res({ code, signal });
        };
        proc.once("close", finish);
        setTimeout(finish, 500).unref();
      });
      proc.once("error", (err) => {
        out(def.name, `could not start: ${err.message}`, process.stderr);
        r.exited = true;
        res({ code: 127, signal: null });
      });
    }),
  };
  pipeOutput(def.name, proc.stdout, process.stdout);
  pipeOutput(def.name, proc.stderr, process.stderr);
  running.set(def.name, r);
  saveServicePids();
  void r.exit.then(({ code, signal }) => {
    saveServicePids();
    if (stopping) return;
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    const failCode = code !== null && code !== 0 ? code : 1;
    if (!ready) {
      warn(`${def.name} exited during start-up with ${how}`);
    } else {
      warn(`${def.name} exited unexpectedly with ${how}; stopping the suite`);
    }
    void shutdown(failCode);
  });
  return r;
}

function liveOnce(port: number): Promise<boolean> {
  return new Promise((res) => {
    const req = request({ host: reachHost.replace(/^\[|\]$/g, ""), port, path: "/health/live", method: "GET", agent: false, timeout: 2000 }, (resp) => {
      resp.resume();
      res(resp.statusCode === 200);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => res(false));
    req.end();
  });
}

async function waitLive(r: Running, deadline: number): Promise<void> {
  for (;;) {
    if (r.exited || stopping) throw new StartFailure(`${r.def.name} stopped before it was ready`);
    if (await liveOnce(r.def.port)) return;
    if (Date.now() > deadline) {
      throw new StartFailure(`${r.def.name} did not answer GET /health/live on port ${r.def.port} within ${START_TIMEOUT_MS / 1000} s`);
    }
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// shutdown

let shuttingDown: Promise<void> | undefined;

function killAll(signal: NodeJS.Signals): void {
  for (const r of running.values()) {
    if (r.exited || r.proc.pid === undefined) continue;
    try {
      // the whole process group of the service
      process.kill(-r.proc.pid, signal);
    } catch {
      try {
        r.proc.kill(signal);
      } catch {
        /* gone */
      }
    }
  }
}

function shutdown(code: number): Promise<void> {
  if (shuttingDown) return shuttingDown;
  stopping = true;
  shuttingDown = (async () => {
    const alive = [...running.values()].filter((r) => !r.exited);
    if (alive.length > 0) say(`stopping ${alive.map((r) => r.def.name).join(", ")}`);
    killAll("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const allExited = Promise.all(alive.map((r) => r.exit)).then(() => true);
    const graceOver = new Promise<boolean>((res) => (timer = setTimeout(() => res(false), STOP_GRACE_MS)));
    if (!(await Promise.race([allExited, graceOver]))) {
      warn(`still running after ${STOP_GRACE_MS / 1000} s, killing: ${alive.filter((r) => !r.exited).map((r) => r.def.name).join(", ")}`);
      killAll("SIGKILL");
      await allExited;
    }
    clearTimeout(timer);
    rmSync(servicesPidFile(), { force: true });
    const inf = infra ?? (await infraStarting?.catch(() => undefined));
    if (inf) {
      say("stopping postgres, redis and nats");
      await inf.stop().catch((err: unknown) => warn(`stopping the servers: ${(err as Error).message}`));
    }
    releaseLock();
    process.exit(code);
  })();
  return shuttingDown;
}

function onSignal(sig: NodeJS.Signals): void {
  const now = Date.now();
  // The same Ctrl-C can arrive twice (terminal and a relaying parent such as tsx): ignore echoes.
  if (now - lastSignalAt < 500) return;
  lastSignalAt = now;
  if (!stopping) {
    say(`${sig}: shutting down (press Ctrl-C again to kill everything at once)`);
    void shutdown(0);
    return;
  }
  warn(`${sig} again: killing everything`);
  killAll("SIGKILL");
  rmSync(servicesPidFile(), { force: true });
  // infra's exit handler kills redis/nats and stops postgres immediately
  releaseLock();
  process.exit(130);
}

// ---------------------------------------------------------------------------------------------
// one suite per data folder

const lockFile = () => join(dataDir, "suite.pid");
let lockHeld = false;

function acquireLock(): void {
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(lockFile(), `${process.pid}\n`, { flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const pid = Number.parseInt(readFileSync(lockFile(), "utf8"), 10);
    if (Number.isInteger(pid) && pid !== process.pid && pidAlive(pid) && isNode(pid)) {
      warn(`another suite (pid ${pid}) is already running on ${dataDir}; stop it first or set SVC_DATA_DIR`);
      process.exit(1);
    }
    writeFileSync(lockFile(), `${process.pid}\n`);
  }
  lockHeld = true;
}

function isNode(pid: number): boolean {
  try {
    return /node/.test(readlinkSync(`/proc/${pid}/exe`));
  } catch {
    return true;
  }
}

function releaseLock(): void {
  if (!lockHeld) return;
  lockHeld = false;
  try {
    if (Number.parseInt(readFileSync(lockFile(), "utf8"), 10) === process.pid) rmSync(lockFile(), { force: true });
  } catch {
    /* gone */
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const services = discoverServices();

  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);
  process.on("exit", () => {
    // last resort (crash): no service outlives the suite
    killAll("SIGKILL");
    releaseLock();
  });
  process.on("uncaughtException", (err) => {
    warn(`internal error: ${err.stack ?? err.message}`);
    void shutdown(1);
  });

  acquireLock();
  if (services.length === 0) warn(`no services found (expected ${servicesDir}/<name>/src/main.ts)`);
  else if (!services.some((s) => s.name === "gateway")) warn("services/gateway/src/main.ts not found; starting the other services only");
  say(`data folder ${dataDir}`);
  await stopLeftovers();

  const infraEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [s, e] of [["svc.database-url", "SVC_DATABASE_URL"], ["svc.redis-url", "SVC_REDIS_URL"], ["svc.nats-url", "SVC_NATS_URL"]] as const) {
    const v = setting(s);
    if (v !== undefined) infraEnv[e] = v;
    else delete infraEnv[e];
  }
  infraStarting = startInfra({
    dataDir,
    ports: {
      postgres: portFromEnv("SVC_PG_PORT", 55432),
      redis: portFromEnv("SVC_REDIS_PORT", 56379),
      nats: portFromEnv("SVC_NATS_PORT", 54222),
    },
    env: infraEnv,
    log: (l) => out("infra", l.replace(/^\[infra\] /, "")),
    detached: true,
  });
  infra = await infraStarting;
  if (stopping) return;

  const secret = internalSecret();
  const key = bootstrapKey();
  const filesystemRoot = setting("svc.filesystem-root") ?? join(dataDir, "store");
  mkdirSync(filesystemRoot, { recursive: true });

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATABASE_URL: infra.databaseUrl,
    SVC_REDIS_URL: infra.redisUrl,
    SVC_NATS_URL: infra.natsUrl,
    SVC_FILESYSTEM_ROOT: filesystemRoot,
    SVC_HOST: bindHost,
  };
  if (secret !== undefined) env.SVC_INTERNAL_SECRET = secret;
  if (key !== undefined) env.SVC_BOOTSTRAP_KEY = key;
  for (const s of services) {
    if (s.name === "gateway") continue;
    env[`SVC_${s.name.toUpperCase().replace(/[.-]/g, "_")}_URL`] = `http://${reachHost}:${s.port}`;
  }
  if (fromDArg("svc.host")) delete env.SVC_HOST; // the -D argument reaches every service anyway

  for (const s of services) {
    // a service of a suite that has just stopped may still be closing its port: allow it a moment
    let free = await portFree(s.port, bindHost);
    for (let i = 0; !free && i < 10; i++) {
      await sleep(300);
      free = await portFree(s.port, bindHost);
    }
    if (!free) {
      throw new StartFailure(`port ${s.port} (${s.name}) is already in use by another process${s.name === "gateway" ? "; choose another with SVC_PORT" : ""}`);
    }
  }

  const deadline = Date.now() + START_TIMEOUT_MS;
  const backends = services.filter((s) => s.name !== "gateway");
  const gateway = services.find((s) => s.name === "gateway");
  const started = backends.map((s) => spawnService(s, env));
  await Promise.all(started.map((r) => waitLive(r, deadline)));
  if (gateway) await waitLive(spawnService(gateway, env), deadline);
  if (stopping) return;
  ready = true;
  if (gateway) say(`suite ready: gateway on ${gatewayUrl}`);
  else say(`suite ready: ${backends.map((s) => `${s.name} on http://${reachHost}:${s.port}`).join(", ")} (no gateway)`);
}

main().catch((err: unknown) => {
  if (stopping) return; // a service exit already explained it
  warn(err instanceof StartFailure ? err.message : `could not start the suite: ${err instanceof Error ? err.message : String(err)}`);
  void shutdown(err instanceof StartFailure ? err.exitCode : 1);
});
