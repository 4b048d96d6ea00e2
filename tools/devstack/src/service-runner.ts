import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeKey } from "@svc/keys";
import { freePort, releasePort } from "./index.js";
import { processReaper, type StopStep } from "./reaper.js";
import { repoRoot, spawnService, type ServiceProcess } from "./service-process.js";
export { serviceCommand } from "./service-process.js";

/**
 * Runs the suite's services as real processes for end-to-end tests and benchmarks, each with
 * its own ports, database and store, so that several suites can run side by side.
 */
export const ALL_SERVICE_NAMES = ["auth", "artifacts", "admin", "notifier", "walker", "console", "gateway"] as const;
export type ServiceName = (typeof ALL_SERVICE_NAMES)[number];
/** The services that exist in this checkout (a service folder with src/main.ts), gateway last. */
export const SERVICE_NAMES: readonly ServiceName[] = ALL_SERVICE_NAMES.filter((n) => existsSync(join(repoRoot, "services", n, "src", "main.ts")));

export interface ServicesOptions {
  databaseUrl: string;
  redisUrl: string;
  natsUrl: string;
  /** Folder for the store; created if absent. */
  dataDir: string;
  /** Extra settings as environment variables (SVC_…); a value of undefined removes the default. */
  env?: Record<string, string | undefined>;
  /** Extra `-Dsvc.x=y` arguments for every service. */
  args?: string[];
  /** Which services to start (default all). */
  services?: readonly ServiceName[];
  /** Echo service output to stderr as it comes (also on when SVC_TEST_VERBOSE=1). */
  echo?: boolean;
  /**
   * Extra node options per service (e.g. `["--cpu-prof"]`), placed before `--import tsx`. Read at
   * every launch, so a later startService() sees changes made to this object.
   */
  nodeArgs?: Partial<Record<ServiceName, string[]>>;
  /**
   * Every upstream service also listens on a Unix domain socket (svc.socket, in a fresh folder
   * under the system's temporary one: a socket path holds at most 103 bytes) and the gateway
   * reaches them there (`unix:` URLs); `urls` stay their TCP ports. Default: SVC_TEST_SOCKETS=1.
   */
  sockets?: boolean;
}

export interface LogLine {
  service: ServiceName;
  line: string;
}

export interface RunningServices {
  gatewayUrl: string;
  urls: Record<ServiceName, string>;
  /** With `sockets`: the `unix:` URL of each upstream service, the gateway's way to it. */
  socketUrls?: Partial<Record<ServiceName, string>>;
  bootstrapKey: string;
  internalSecret: string;
  storeRoot: string;
  tenant: string;
  /** Every line every service printed so far. */
  output(service?: ServiceName): string[];
  /** Waits until a line matching `pattern` appears (in what was already printed too). */
  waitForOutput(pattern: RegExp, opts?: { service?: ServiceName; timeoutMs?: number }): Promise<string>;
  /** Stops a service; one still running `graceMs` after the signal (10 s by default) is killed (exit code null). */
  stopService(name: ServiceName, signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
  /** Starts a stopped service again; `env` changes its settings from then on. */
  startService(name: ServiceName, env?: Record<string, string | undefined>): Promise<void>;
  /** The process id of a running service. */
  pid(name: ServiceName): number | undefined;
  /**
   * Another gateway node in front of the same upstreams, with its own cache: for
   * multi-node behaviour. `env` overrides settings for that node only.
   */
  startGateway(env?: Record<string, string>): Promise<Replica>;
  /**
   * Another process of any upstream service (a second walker, artifacts, ...) on its own port,
   * with the same settings as the first: for replica behaviour. `env` overrides settings for it.
   */
  startReplica(name: ServiceName, env?: Record<string, string>): Promise<Replica>;
  stop(): Promise<void>;
}

export interface Replica {
  url: string;
  pid: number | undefined;
  output: () => string[];
  /** SIGTERM by default; SIGKILL to play a crash. */
  stop: (signal?: NodeJS.Signals) => Promise<void>;
}

/** A copy of this process's environment without the developer's own SVC_ variables: they must not leak into tests. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("SVC_")) base[k] = v;
  return base;
}

/** `base` with `settings` on top; a setting of undefined is left out. */
function withSettings(base: NodeJS.ProcessEnv, settings: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const [k, v] of Object.entries(settings)) if (v !== undefined) env[k] = v;
  return env;
}

/** How the reaper stops a service whose test process died: its shutdown, then SIGKILL. */
const SERVICE_STOP_STEPS: StopStep[] = [
  ["SIGTERM", 5_000],
  ["SIGKILL", 0],
];

export async function startServices(opts: ServicesOptions): Promise<RunningServices> {
  const names = opts.services ?? SERVICE_NAMES;
  const echo = opts.echo ?? process.env.SVC_TEST_VERBOSE === "1";
  const storeRoot = join(opts.dataDir, "store");
  mkdirSync(storeRoot, { recursive: true });
  const tenant = opts.env?.SVC_TENANT ?? "default";
  const bootstrapKey = opts.env && "SVC_BOOTSTRAP_KEY" in opts.env ? (opts.env.SVC_BOOTSTRAP_KEY ?? "") : makeKey(tenant);
  const internalSecret = randomBytes(32).toString("base64url");
  const ports = {} as Record<ServiceName, number>;
  for (const n of ALL_SERVICE_NAMES) ports[n] = await freePort();
  const urls = Object.fromEntries(ALL_SERVICE_NAMES.map((n) => [n, `http://127.0.0.1:${ports[n]}`])) as Record<ServiceName, string>;

  const sockets = opts.sockets ?? process.env.SVC_TEST_SOCKETS === "1";
  const socketDir = sockets ? mkdtempSync(join(tmpdir(), "svc-sock-")) : undefined;
  const socketUrls = socketDir ? Object.fromEntries(names.filter((n) => n !== "gateway").map((n) => [n, `unix:${join(socketDir, `${n}.sock`)}`])) : undefined;
  const base = cleanEnv();
  const shared: Record<string, string | undefined> = {
    SVC_DATABASE_URL: opts.databaseUrl,
    SVC_REDIS_URL: opts.redisUrl,
    SVC_NATS_URL: opts.natsUrl,
    SVC_INTERNAL_SECRET: internalSecret,
    SVC_BOOTSTRAP_KEY: bootstrapKey,
    SVC_FILESYSTEM_ROOT: storeRoot,
    SVC_HOST: "127.0.0.1",
    SVC_AUTH_URL: urls.auth,
    SVC_ARTIFACTS_URL: urls.artifacts,
    SVC_ADMIN_URL: urls.admin,
    SVC_NOTIFIER_URL: urls.notifier,
    SVC_WALKER_URL: urls.walker,
    SVC_CONSOLE_URL: urls.console,
    // The console calls the API through the suite's gateway, over the suite's plain http.
    SVC_UI_GATEWAY_URL: urls.gateway,
    SVC_UI_SECURE_COOKIE: "false",
    SVC_LOG_LEVEL: "info",
    ...opts.env,
  };

  const lines: LogLine[] = [];
  const MAX_LINES = 200_000;
  const waiters = new Set<{ pattern: RegExp; service?: ServiceName; resolve: (l: string) => void }>();
  const children = new Map<ServiceName, ServiceProcess>();
  // A test worker killed outright (a timeout, SIGKILL) runs no exit handler: its reaper stops the
  // services it started, which would otherwise run on, retrying servers that are gone.
  const reaper = processReaper(join(opts.dataDir, "reaper.log"));
  const watch = (proc: ServiceProcess, port: number) => {
    if (proc.pid === undefined) return;
    const key = `${proc.name} on port ${port} of ${opts.dataDir}`;
    reaper.watch(key, { pid: proc.pid, stage: 0, steps: SERVICE_STOP_STEPS });
    void proc.exit.then(() => reaper.forget(key));
  };

  const record = (service: ServiceName, line: string) => {
    lines.push({ service, line });
    // A long run (a bench logs an access line per request) keeps its newest lines only.
    if (lines.length > MAX_LINES) lines.splice(0, lines.length - MAX_LINES * 0.9);
    if (echo) process.stderr.write(`${service.padEnd(9)}| ${line}\n`);
    for (const w of waiters) {
      if ((!w.service || w.service === service) && w.pattern.test(line)) {
        waiters.delete(w);
        w.resolve(line);
      }
    }
  };

  const overrides = new Map<ServiceName, Record<string, string | undefined>>();
  if (socketUrls) {
    for (const [name, url] of Object.entries(socketUrls)) overrides.set(name as ServiceName, { SVC_SOCKET: url.slice("unix:".length) });
    overrides.set("gateway", Object.fromEntries(Object.entries(socketUrls).map(([name, url]) => [`SVC_${name.toUpperCase()}_URL`, url])));
  }
  const launch = async (name: ServiceName, extra?: Record<string, string | undefined>) => {
    if (extra) overrides.set(name, { ...overrides.get(name), ...extra });
    const env = withSettings(base, { ...shared, ...overrides.get(name), SVC_PORT: String(ports[name]) });
    const proc = spawnService({ name, env, args: opts.args, nodeArgs: opts.nodeArgs?.[name], onLine: (line) => record(name, line) });
    children.set(name, proc);
    watch(proc, ports[name]);
    try {
      await proc.waitLive(urls[name], 60_000);
    } catch (err) {
      const tail = lines.filter((l) => l.service === name).slice(-30).map((l) => l.line).join("\n");
      throw new Error(`${name} ${(err as Error).message}:\n${tail}`);
    }
  };

  const stopOne = (name: ServiceName, signal: NodeJS.Signals = "SIGTERM", graceMs?: number): Promise<number | null> => {
    const proc = children.get(name);
    return proc ? proc.stop(signal, graceMs) : Promise.resolve(null);
  };

  try {
    // All at once, the gateway too: it answers before its upstreams do, and is ready once they are.
    await Promise.all(names.map((n) => launch(n)));
  } catch (err) {
    await Promise.all([...children.keys()].map((n) => stopOne(n, "SIGKILL")));
    throw err;
  }

  const extras = new Set<ServiceProcess>();
  const onExit = () => {
    for (const p of [...children.values(), ...extras]) p.kill("SIGKILL");
  };
  process.once("exit", onExit);

  const replicaPorts: number[] = [];
  async function startReplica(name: ServiceName, env: Record<string, string> = {}): Promise<Replica> {
    const port = await freePort();
    replicaPorts.push(port);
    const url = `http://127.0.0.1:${port}`;
    const out: string[] = [];
    const proc = spawnService({
      name,
      // A replica of an upstream listens on its port only: the first process holds the socket.
      env: withSettings(base, { ...shared, ...overrides.get(name), SVC_SOCKET: undefined, ...env, SVC_PORT: String(port) }),
      args: opts.args,
      nodeArgs: opts.nodeArgs?.[name],
      onLine: (line) => {
        if (line) out.push(line);
      },
    });
    extras.add(proc);
    watch(proc, port);
    try {
      await proc.waitLive(url, 60_000);
    } catch (err) {
      proc.kill("SIGKILL");
      throw new Error(`extra ${name} ${(err as Error).message}:\n${out.slice(-30).join("\n")}`);
    }
    return {
      url,
      pid: proc.pid,
      output: () => out,
      stop: async (signal: NodeJS.Signals = "SIGTERM") => {
        await proc.stop(signal);
        extras.delete(proc);
      },
    };
  }

  return {
    gatewayUrl: urls.gateway,
    urls,
    socketUrls,
    bootstrapKey,
    internalSecret,
    storeRoot,
    tenant,
    output: (service) => lines.filter((l) => !service || l.service === service).map((l) => l.line),
    waitForOutput(pattern, o = {}) {
      const seen = lines.find((l) => (!o.service || l.service === o.service) && pattern.test(l.line));
      if (seen) return Promise.resolve(seen.line);
      return new Promise((res, rej) => {
        const w = { pattern, service: o.service, resolve: res };
        waiters.add(w);
        setTimeout(() => {
          if (waiters.delete(w)) rej(new Error(`no output matching ${pattern} within ${o.timeoutMs ?? 10_000} ms`));
        }, o.timeoutMs ?? 10_000).unref();
      });
    },
    stopService: stopOne,
    startService: (name, env) => launch(name, env),
    pid: (name) => children.get(name)?.pid,
    startGateway: (env = {}) => startReplica("gateway", env),
    startReplica: (name, env = {}) => startReplica(name, env),
    async stop() {
      process.removeListener("exit", onExit);
      for (const p of extras) p.kill("SIGKILL");
      await Promise.all([...children.keys()].map((n) => stopOne(n)));
      for (const port of [...Object.values(ports), ...replicaPorts]) releasePort(port);
      if (socketDir) rmSync(socketDir, { recursive: true, force: true });
    },
  };
}

/** Runs one service expecting it to refuse to start; resolves with its exit code and output. */
export async function runToExit(name: ServiceName, env: Record<string, string>, args: string[] = [], timeoutMs = 30_000): Promise<{ code: number | null; output: string }> {
  let output = "";
  const proc = spawnService({ name, env: { ...cleanEnv(), ...env }, args, onLine: (line) => (output += `${line}\n`) });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, rej) => {
    timer = setTimeout(() => {
      proc.kill("SIGKILL");
      rej(new Error(`${name} did not exit within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
  });
  try {
    const { code } = await Promise.race([proc.exit, timedOut]);
    return { code, output };
  } finally {
    clearTimeout(timer);
  }
}
