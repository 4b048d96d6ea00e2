// `npm start`: the whole suite in the foreground, in one command.
//
// Starts our own Postgres, Redis and NATS (tools/devstack) under the data folder, keeps the
// internal secret and a bootstrap key there, then runs every service (services/*/src/main.ts) as
// its own process through the devstack's supervisor (service-process.ts), gateway last. On a
// terminal their log events are coloured lines led by the service name (pino-pretty); piped they
// stay JSON (suite-output.ts). The bootstrap-key banner and "suite ready" come once every service
// answers. A service that exits while the suite runs is restarted with a back-off; only a crash
// loop stops the suite (service-supervisor.ts). Ctrl-C or SIGTERM stops the services (SIGTERM,
// SIGKILL after svc.shutdown-grace and 5 s), then the servers; a second Ctrl-C kills everything.
// The servers are supervised too: one that dies is started again on its own port, kept reserved
// (tools/devstack). Should the suite itself be killed (SIGKILL), a reaper process it started
// (tools/devstack/src/reaper.ts) stops the services and the servers it left. `npm start` runs it
// with `node --import tsx`, not the `tsx` command: tsx relays a Ctrl-C and kills its child with
// SIGKILL when the child has not acknowledged it within about 60 ms, which a busy machine misses.
//
// Environment: SVC_DATA_DIR (default <repo>/.data/local), SVC_PG_PORT / SVC_REDIS_PORT /
// SVC_NATS_PORT (fixed; unset: 55432 / 56379 / 54222 when free, else a free port),
// SVC_DATABASE_URL / SVC_REDIS_URL / SVC_NATS_URL (use the operator's server instead), SVC_PORT
// (gateway, 8080; the other services take free ports), SVC_HOST, SVC_TENANT, SVC_INTERNAL_SECRET,
// SVC_BOOTSTRAP_KEY (blank: none this run), SVC_FILESYSTEM_ROOT, SVC_SHUTDOWN_GRACE.
// `-Dsvc.x=y` arguments are passed to every service; `--no-bootstrap-key` retires the stored key.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { isLoopback, parseSettingDuration, systemProperties } from "@svc/kit";
import { freePort, startInfra, type Infra } from "@svc/devstack";
import { acquireLock, releaseLock } from "@svc/devstack/data-folder-lock";
import { bootstrapKeyBanner, localBootstrapChoice, localInternalSecret } from "@svc/devstack/local-secrets";
import { portIsFree } from "@svc/devstack/ports";
import { pidAlive, sleep } from "@svc/devstack/process";
import { processReaper } from "@svc/devstack/reaper";
import { ensureServiceBundles } from "@svc/devstack/service-bundle";
import { repoRoot, spawnService } from "@svc/devstack/service-process";
import { superviseService, type SupervisedService } from "@svc/devstack/service-supervisor";
import { createSuiteOutput } from "@svc/devstack/suite-output";

const servicesDir = join(repoRoot, "services");

const START_TIMEOUT_MS = 60_000;
/** Beyond a service's own shutdown grace: it exits 1 when the grace is over, give it time to. */
const STOP_MARGIN_MS = 5_000;
/** The local servers' usual ports, taken when free (a second checkout's suite takes others). */
const PREFERRED_INFRA_PORTS = { postgres: 55432, redis: 56379, nats: 54222 };

const output = createSuiteOutput({
  width: (() => {
    try {
      return Math.max(5, ...readdirSync(servicesDir).map((n) => n.length));
    } catch {
      return 5;
    }
  })(),
});
const say = (line: string, source?: string) => output.info(line, source);
const warn = (line: string) => output.warn(line);

// ---------------------------------------------------------------------------------------------
// settings: a -Dsvc.x=y argument wins over SVC_X env, as in the services

const args = process.argv.slice(2);
const props = systemProperties(args);
// One -Dsvc.port for every process would put them all on the same port: it is the gateway's.
const dArgs = args.filter((a) => a.startsWith("-D") && !/^-Dsvc\.port(=|$)/.test(a));
const noBootstrapKey = args.includes("--no-bootstrap-key");
for (const a of args) {
  if (!a.startsWith("-D") && a !== "--no-bootstrap-key") warn(`ignoring argument ${JSON.stringify(a)} (only -Dsvc.name=value arguments and --no-bootstrap-key are understood)`);
}
const envName = (setting: string) => setting.toUpperCase().replace(/[.-]/g, "_");
const rawSetting = (name: string): string | undefined => props.get(name) ?? process.env[envName(name)];
const setting = (name: string): string | undefined => {
  const v = rawSetting(name);
  return v === undefined || v.trim() === "" ? undefined : v.trim();
};

function portNumber(what: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    warn(`${what}=${raw} is not a port number (1-65535)`);
    process.exit(2);
  }
  return n;
}

const dataDir = resolve(process.env.SVC_DATA_DIR?.trim() || join(repoRoot, ".data", "local"));
const tenant = setting("svc.tenant") ?? "default";
const bindHost = setting("svc.host") ?? "127.0.0.1";
/** Where the services can be reached from here (a wildcard bind address is not one). */
const reachHost = (() => {
  const h = bindHost.replace(/^\[|\]$/g, "");
  if (h === "0.0.0.0" || h === "::" || h === "") return "127.0.0.1";
  return h.includes(":") ? `[${h}]` : h;
})();
const gatewayPort = portNumber("svc.port", setting("svc.port"), 8080);
const gatewayUrl = `http://${reachHost}:${gatewayPort}`;
// Read as the services read it, so that the suite never cuts a service's own drain short.
const shutdownGraceMs = (() => {
  const raw = setting("svc.shutdown-grace");
  const ms = raw === undefined ? 25_000 : parseSettingDuration(raw);
  if (ms === undefined) {
    warn(`svc.shutdown-grace=${raw} is not a duration (such as 25s or PT25S)`);
    process.exit(2);
  }
  return ms;
})();
const stopWaitMs = shutdownGraceMs + STOP_MARGIN_MS;

// ---------------------------------------------------------------------------------------------
// services

interface ServiceDef {
  name: string;
  /** What its command line names: services/<name>/src/main (main.ts through tsx, or its bundle main.bundle.cjs). */
  main: string;
  port: number;
  /** Its Unix socket (svc.socket), where the other services and the gateway reach it; unset: its port only. */
  socket?: string;
}

async function discoverServices(): Promise<ServiceDef[]> {
  let names: string[] = [];
  try {
    names = readdirSync(servicesDir)
      .filter((name) => !name.startsWith(".") && existsSync(join(servicesDir, name, "src", "main.ts")))
      .sort();
  } catch {
    /* no services folder */
  }
  // Reserved ports (ports.ts), held until the suite exits: a second checkout's suite, or a test
  // run, never picks them, and a restarted service finds its own port again.
  const defs: ServiceDef[] = [];
  for (const name of names) {
    defs.push({ name, main: join(servicesDir, name, "src", "main"), port: name === "gateway" ? gatewayPort : await freePort() });
  }
  // gateway last
  return [...defs.filter((d) => d.name !== "gateway"), ...defs.filter((d) => d.name === "gateway")];
}

const running = new Map<string, { def: ServiceDef; sup: SupervisedService }>();
let infra: Infra | undefined;
let infraStarting: Promise<Infra> | undefined;
let stopping = false;
let ready = false;
let lastSignalAt = 0;
let startedBySignal = false;
let signalsAfterShutdown = 0;
// Under `npm start`, each Ctrl-C reaches this process twice: from the terminal (to the whole
// process group) and relayed by npm, which on a busy machine can come seconds later, past any
// echo window. There the signal after the one that started the shutdown is taken as its relay,
// and "again" is the one after that.
const relayedByNpm = process.env.npm_lifecycle_event !== undefined;
let suiteLock: string | undefined;

const servicesPidFile = () => join(dataDir, "services.pid");

function saveServicePids(): void {
  const list = [...running.values()]
    .filter((r) => !r.sup.current.exited && r.sup.current.pid !== undefined)
    .map((r) => ({ name: r.def.name, pid: r.sup.current.pid, main: r.def.main }));
  try {
    writeFileSync(servicesPidFile(), `${JSON.stringify(list)}\n`);
  } catch {
    /* best effort */
  }
}

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
    const deadline = Date.now() + stopWaitMs;
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

class StartFailure extends Error {}

function startService(def: ServiceDef, env: NodeJS.ProcessEnv): SupervisedService {
  const sup = superviseService({
    name: def.name,
    url: `http://${reachHost}:${def.port}`,
    spawn: () =>
      spawnService({
        name: def.name,
        env: { ...env, SVC_PORT: String(def.port), ...(def.socket ? { SVC_SOCKET: def.socket } : {}) },
        args: dArgs,
        detached: true,
        onLine: (line, stream) => output.service(def.name, line, stream),
      }),
    onSpawn: (proc) => {
      saveServicePids();
      // Should the suite die without stopping it (SIGKILL), the reaper does, as shutdown() would.
      const key = `service ${def.name}`;
      const reaper = processReaper();
      if (proc.pid !== undefined) reaper.watch(key, { pid: proc.pid, group: true, stage: 0, steps: [["SIGTERM", stopWaitMs], ["SIGKILL", 0]] });
      void proc.exit.then(() => {
        reaper.forget(key);
        saveServicePids();
      });
    },
    // Not during start-up: a service that cannot start says why at once instead of looping.
    mayRestart: () => ready && !stopping,
    log: { info: (l) => say(l), warn },
    onGiveUp: ({ code, signal }, crashLoop) => {
      if (stopping) return;
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      warn(crashLoop ? `${def.name} is in a crash loop; stopping the suite` : `${def.name} exited during start-up with ${how}`);
      void shutdown(code !== null && code !== 0 ? code : 1);
    },
  });
  running.set(def.name, { def, sup });
  saveServicePids();
  return sup;
}

const READY_TIMEOUT_MS = 60_000;

async function waitGatewayReady(deadline: number): Promise<void> {
  let last = "";
  while (!stopping) {
    const answer = await fetch(`${gatewayUrl}/health/ready`, { signal: AbortSignal.timeout(5000) }).then(
      async (r) => ({ status: r.status, body: (await r.json().catch(() => ({}))) as { checks?: Record<string, { status: string; error?: string }> } }),
      (err: Error) => ({ status: 0, body: { checks: { gateway: { status: "down", error: err.message } } } }),
    );
    if (answer.status === 200) return;
    last = Object.entries(answer.body.checks ?? {})
      .filter(([, c]) => c.status !== "up")
      .map(([name, c]) => `${name}${c.error ? ` (${c.error})` : ""}`)
      .join(", ");
    if (Date.now() > deadline) {
      warn(`the gateway is live but not ready after ${READY_TIMEOUT_MS / 1000} s; not ready: ${last || `answered ${answer.status}`} (GET ${gatewayUrl}/health/ready)`);
      return;
    }
    await sleep(200);
  }
}

async function waitLive(def: ServiceDef, sup: SupervisedService, deadline: number): Promise<void> {
  try {
    await sup.current.waitLive(`http://${reachHost}:${def.port}`, Math.max(0, deadline - Date.now()), () => stopping);
  } catch (err) {
    const why = (err as Error).message;
    throw new StartFailure(/exited|stopped/.test(why) ? `${def.name} stopped before it was ready` : `${def.name} did not answer GET /health/live on port ${def.port} within ${START_TIMEOUT_MS / 1000} s`);
  }
}

// ---------------------------------------------------------------------------------------------
// shutdown

let shuttingDown: Promise<void> | undefined;

const killAll = (signal: NodeJS.Signals) => {
  for (const r of running.values()) r.sup.kill(signal);
};

function shutdown(code: number): Promise<void> {
  if (shuttingDown) return shuttingDown;
  stopping = true;
  shuttingDown = (async () => {
    const alive = [...running.values()].filter((r) => !r.sup.current.exited);
    if (alive.length > 0) say(`stopping ${alive.map((r) => r.def.name).join(", ")} (waiting up to ${stopWaitMs / 1000} s: svc.shutdown-grace and ${STOP_MARGIN_MS / 1000} s)`);
    killAll("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const allExited = Promise.all(alive.map((r) => r.sup.current.exit)).then(() => true);
    const graceOver = new Promise<boolean>((res) => (timer = setTimeout(() => res(false), stopWaitMs)));
    if (!(await Promise.race([allExited, graceOver]))) {
      warn(`still running after ${stopWaitMs / 1000} s, killing: ${alive.filter((r) => !r.sup.current.exited).map((r) => r.def.name).join(", ")}`);
      for (const r of alive) r.sup.current.kill("SIGKILL");
      await allExited;
    }
    clearTimeout(timer);
    rmSync(servicesPidFile(), { force: true });
    const inf = infra ?? (await infraStarting?.catch(() => undefined));
    if (inf) {
      say("stopping postgres, redis and nats");
      await inf.stop().catch((err: unknown) => warn(`stopping the servers: ${(err as Error).message}`));
    }
    if (suiteLock) releaseLock(suiteLock);
    process.exit(code);
  })();
  return shuttingDown;
}

function onSignal(sig: NodeJS.Signals): void {
  const now = Date.now();
  // The same Ctrl-C can arrive twice (terminal and a relaying parent): ignore quick echoes.
  if (!relayedByNpm && now - lastSignalAt < 500) return;
  lastSignalAt = now;
  if (!stopping) {
    startedBySignal = true;
    say(`${sig}: shutting down (press Ctrl-C again to kill everything at once)`);
    void shutdown(0);
    return;
  }
  // The rest of the Ctrl-C that started the shutdown: npm's relay of it.
  if (startedBySignal && relayedByNpm && (signalsAfterShutdown += 1) === 1) return;
  warn(`${sig} again: killing everything`);
  killAll("SIGKILL");
  rmSync(servicesPidFile(), { force: true });
  // infra's exit handler kills redis/nats and stops postgres immediately
  if (suiteLock) releaseLock(suiteLock);
  process.exit(130);
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const services = await discoverServices();
  // Each service as one bundled module: a start in a second or two rather than compiling its sources (service-bundle.ts).
  await ensureServiceBundles(services.map((d) => d.name));

  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);
  process.on("exit", () => {
    // last resort (crash): no service outlives the suite
    killAll("SIGKILL");
    if (suiteLock) releaseLock(suiteLock);
  });
  process.on("uncaughtException", (err) => {
    warn(`internal error: ${err.stack ?? err.message}`);
    void shutdown(1);
  });

  // One suite per data folder.
  mkdirSync(dataDir, { recursive: true });
  try {
    suiteLock = acquireLock(dataDir, "suite.pid");
  } catch (err) {
    warn(`another suite is already running: ${(err as Error).message} (or set SVC_DATA_DIR)`);
    process.exit(1);
  }
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
  const fixedPort = (name: string) => (process.env[name]?.trim() ? portNumber(name, process.env[name], 0) : undefined);
  infraStarting = startInfra({
    dataDir,
    ports: { postgres: fixedPort("SVC_PG_PORT"), redis: fixedPort("SVC_REDIS_PORT"), nats: fixedPort("SVC_NATS_PORT") },
    preferredPorts: PREFERRED_INFRA_PORTS,
    env: infraEnv,
    log: (l) => say(l.replace(/^\[infra\] /, ""), "infra"),
    detached: true,
    // A server that dies is started again on its port, as a service is; a crash loop stops the suite.
    supervise: true,
    onGiveUp: (name) => {
      if (stopping) return;
      warn(`${name} is in a crash loop; stopping the suite`);
      void shutdown(1);
    },
  });
  infra = await infraStarting;
  if (stopping) return;

  // The user's own secret and key (setting or -D) reach the services by themselves.
  const secret = setting("svc.internal-secret") ? undefined : localInternalSecret(dataDir);
  // A bootstrap key of the user's own reaches the services by itself; one set blank means none
  // for this run (nothing stored changes); --no-bootstrap-key retires the stored one for good.
  const ownKey = rawSetting("svc.bootstrap-key");
  const choice = ownKey === undefined || noBootstrapKey ? localBootstrapChoice(dataDir, tenant, noBootstrapKey) : { key: undefined, notes: [] };
  if (ownKey !== undefined && ownKey.trim() === "" && !noBootstrapKey) say("no bootstrap key this run (svc.bootstrap-key is set blank)");
  const bootstrap = choice.key;
  for (const note of choice.notes) say(note);
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
  if (bootstrap !== undefined) env.SVC_BOOTSTRAP_KEY = bootstrap.key;
  if (noBootstrapKey) {
    delete env.SVC_BOOTSTRAP_KEY;
    if (props.has("svc.bootstrap-key")) warn("--no-bootstrap-key: the -Dsvc.bootstrap-key argument still reaches the services");
  }
  // The services reach each other, the gateway its upstreams, over Unix sockets in the data
  // folder (a large download through the gateway costs about half the CPU of loopback TCP); the
  // ports stay open. A path too long for a socket (103 bytes) keeps TCP.
  const socketDir = join(dataDir, "run");
  const socketsFit = services.every((s) => Buffer.byteLength(join(socketDir, `${s.name}.sock`)) <= 103);
  if (socketsFit) {
    mkdirSync(socketDir, { recursive: true, mode: 0o700 });
    chmodSync(socketDir, 0o700);
  } else say(`the services reach each other over TCP: socket paths under ${socketDir} would be longer than 103 bytes`);
  for (const s of services) {
    if (s.name === "gateway") continue;
    if (socketsFit) s.socket = join(socketDir, `${s.name}.sock`);
    env[`SVC_${s.name.toUpperCase().replace(/[.-]/g, "_")}_URL`] = s.socket ? `unix:${s.socket}` : `http://${reachHost}:${s.port}`;
  }
  if (props.has("svc.host")) delete env.SVC_HOST; // the -D argument reaches every service anyway
  // The console calls the API through this gateway; on this machine's plain http its session
  // cookie cannot be HTTPS-only (SVC_UI_SECURE_COOKIE=false is meant for exactly such local runs).
  if (setting("svc.ui.gateway-url") === undefined) env.SVC_UI_GATEWAY_URL = gatewayUrl;
  if (setting("svc.ui.secure-cookie") === undefined && isLoopback(reachHost)) {
    env.SVC_UI_SECURE_COOKIE = "false";
    say("console: session cookies without Secure on this loopback address (set SVC_UI_SECURE_COOKIE=true behind https)");
  }

  for (const s of services) {
    // a service of a suite that has just stopped may still be closing its port: allow it a moment
    let free = await portIsFree(s.port, bindHost);
    for (let i = 0; !free && i < 10; i++) {
      await sleep(300);
      free = await portIsFree(s.port, bindHost);
    }
    if (!free) {
      throw new StartFailure(`port ${s.port} (${s.name}) is already in use by another process${s.name === "gateway" ? "; choose another with SVC_PORT" : ""}`);
    }
  }

  const deadline = Date.now() + START_TIMEOUT_MS;
  const backends = services.filter((s) => s.name !== "gateway");
  const gateway = services.find((s) => s.name === "gateway");
  await Promise.all(backends.map((s) => waitLive(s, startService(s, env), deadline)));
  if (gateway) await waitLive(gateway, startService(gateway, env), deadline);
  // Live is not ready: the gateway is ready once each upstream's own readiness probe answers (a
  // busy machine can take a while longer). "suite ready" waits for that, so that a request made
  // on reading it is served.
  if (gateway) await waitGatewayReady(Date.now() + READY_TIMEOUT_MS);
  if (stopping) return;
  ready = true;
  // Last, once every service answers, so that start-up lines do not bury them.
  if (bootstrap?.created) output.text(bootstrapKeyBanner(bootstrap, tenant, gatewayUrl));
  else if (bootstrap) say(`bootstrap key (tenant "${tenant}"): stored in ${bootstrap.file}`);
  if (gateway) say(`suite ready: gateway on ${gatewayUrl} (${backends.map((s) => `${s.name} ${s.port}`).join(", ")})`);
  else say(`suite ready: ${backends.map((s) => `${s.name} on http://${reachHost}:${s.port}`).join(", ")} (no gateway)`);
}

main().catch((err: unknown) => {
  if (stopping) return; // a service exit already explained it
  warn(err instanceof StartFailure ? err.message : `could not start the suite: ${err instanceof Error ? err.message : String(err)}`);
  void shutdown(1);
});
