// Local infrastructure for the suite: our own Postgres, Redis and NATS (JetStream) instances,
// each with its own data folder under `dataDir` and its own (non-default) port, so a machine that
// already runs these servers on their usual ports is never disturbed. System services are never
// touched: servers run as plain child processes (Postgres through pg_ctl) and are stopped by us.
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { ensureSome, isRoot, type ServerName } from "./binaries.js";
import { CHILD_STOP_STEPS, childStart, childStop, killStale, type ChildState } from "./child-server.js";
import { acquireLock } from "./data-folder-lock.js";
import { registerCleanup, unregisterCleanup } from "./exit-cleanup.js";
import { localSecret } from "./local-secrets.js";
import { NATS_USER, natsServer } from "./nats-server.js";
import { portIsFree, releasePort, reservePort, reserveThisPort } from "./ports.js";
import { pidRunning, sleep } from "./process.js";
import { processReaper, type StopStep } from "./reaper.js";
import { restartBackoff, type RestartPolicy } from "./service-supervisor.js";
import {
  pgPrepare,
  pgStart,
  pgStartReplica,
  pgStop,
  pgStopImmediateSync,
  pgSystemUser,
  pgUrl,
  postmasterPid,
  preparePgHome,
  withClient,
  withDatabase,
  type PgState,
} from "./postgres-server.js";
import { redisServer } from "./redis-server.js";
export { ensureBinaries, ensureChromium, ensureDebianPackages, findInPath, installPackages, updateAptLists, type Binaries, type ServerName } from "./binaries.js";
export { createDatabase } from "./postgres-server.js";
export { natsInfo } from "./nats-server.js";
export { redisPing } from "./redis-server.js";
export { releasePort } from "./ports.js";

export interface InfraOptions {
  /** Absolute path; everything lives under it (pg/, redis/, nats/, logs/). */
  dataDir: string;
  /** Fixed ports; those not given are picked with freePort(). */
  ports?: { postgres?: number; redis?: number; nats?: number };
  /** Ports tried first where no fixed one is given; taken by another process: a picked one instead. */
  preferredPorts?: { postgres?: number; redis?: number; nats?: number };
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
  /**
   * Keep the servers running, as `npm start` keeps its services: one that dies (not stopped
   * through stop() or stopServer()) is started again at once on the same port and data, then
   * with a back-off (SERVER_RESTART_POLICY); `onGiveUp` hears of a crash loop. Default false (the
   * tests that stop a server to see degraded behaviour want it to stay down).
   */
  supervise?: boolean;
  onGiveUp?: (name: ServerName, why: string) => void;
}

/**
 * Servers are restarted sooner than services (a service's first restart waits 1 s): their port
 * stays reserved for this run meanwhile, but a program outside this project could still take it.
 */
export const SERVER_RESTART_POLICY: RestartPolicy = { initialDelayMs: 100, maxDelayMs: 10_000, resetAfterMs: 60_000, crashLoopLimit: 6 };
/** How the reaper stops our postmaster when this process dies: fast shutdown, immediate, kill. */
const POSTGRES_STOP_STEPS: StopStep[] = [["SIGINT", 20_000], ["SIGQUIT", 5_000], ["SIGKILL", 0]];
/** How often a supervised postmaster (pg_ctl's daemon, not our child) is looked at. */
const POSTGRES_CHECK_MS = 500;

/**
 * Our servers accept only clients that know their password: generated on first use and kept in
 * the data folder (postgres-password, redis-password, nats-password; mode 0600), carried by the
 * URLs below.
 */
export interface Infra {
  /** postgres://postgres:<password>@127.0.0.1:port/svc — a ready database the suite may use. */
  databaseUrl: string;
  /** URL of the 'postgres' maintenance database on the same server (for CREATE DATABASE). */
  adminDatabaseUrl: string;
  /** redis://:<password>@127.0.0.1:port */
  redisUrl: string;
  /** nats://svc:<password>@127.0.0.1:port */
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
  /**
   * A read replica of the managed Postgres (a hot standby streaming from it, on a port of its
   * own): `databaseUrl(db)` is a URL of it. Stopped with the infra, or by its own stop().
   */
  startReadReplica(): Promise<{ databaseUrl(db: string): string; stop(): Promise<void> }>;
}

const DEFAULT_READY_TIMEOUT_MS = 30_000;

/**
 * A TCP port on 127.0.0.1 that is free and reserved for this process, so that no other run of
 * this project on the machine picks it too (see ports.ts).
 */
export function freePort(): Promise<number> {
  return reservePort();
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
  // Whatever this process dies of (SIGKILL included), its servers are stopped after it.
  const reaper = need.length > 0 ? processReaper(join(dataDir, "logs", "reaper.log")) : undefined;
  const reaperKey = (name: ServerName) => `${name} of ${dataDir}`;
  const reserved = new Set<number>();

  let pgState: PgState | undefined;
  const replicas = new Set<PgState>();
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
    for (const r of replicas) if (r.running) pgStopImmediateSync(r);
    if (pgState?.running) pgStopImmediateSync(pgState);
    if (lockFile) rmSync(lockFile, { force: true });
  };
  registerCleanup(cleanupSync);
  const removeHandlers = () => unregisterCleanup(cleanupSync);

  /** Servers stopped on purpose (stop(), stopServer()): not restarted. */
  const held = new Set<ServerName>();
  const stopAll = async () => {
    for (const n of ["postgres", "redis", "nats"] as const) held.add(n);
    await Promise.all(Object.values(children).map((st) => (st ? childStop(st) : undefined)));
    for (const r of replicas) await pgStop(r, "fast").catch((err) => log(`[infra] postgres replica stop: ${(err as Error).message}`));
    if (pgState) await pgStop(pgState, "fast").catch((err) => log(`[infra] postgres stop: ${(err as Error).message}`));
    for (const n of ["postgres", "redis", "nats"] as const) reaper?.forget(reaperKey(n));
    await reaper?.idle();
    for (const port of reserved) releasePort(port);
    if (lockFile) rmSync(lockFile, { force: true });
    removeHandlers();
    stopped = true;
  };
  const watchPostgres = (st: PgState) => {
    const pid = postmasterPid(st);
    if (pid !== undefined) reaper?.watch(reaperKey("postgres"), { pid, stage: 1, steps: POSTGRES_STOP_STEPS });
  };
  const watchChild = (st: ChildState) => {
    if (st.child?.pid !== undefined) reaper?.watch(reaperKey(st.name), { pid: st.child.pid, group: opts.detached ?? false, stage: 1, steps: CHILD_STOP_STEPS });
  };
  const startPostgres = async (st: PgState) => {
    await pgStart(st, timeoutMs);
    watchPostgres(st);
  };
  const startChild = async (st: ChildState) => {
    await childStart(st, opts.detached ?? false, timeoutMs);
    watchChild(st);
  };

  // Supervision: a server that died is started again on its own port (kept reserved).
  const backoffs = new Map<ServerName, ReturnType<typeof restartBackoff>>();
  const startedAt = new Map<ServerName, number>();
  const restarting = new Set<ServerName>();
  const died = (name: ServerName, how: string) => {
    if (!opts.supervise || held.has(name) || restarting.has(name)) return;
    restarting.add(name);
    void (async () => {
      let why = how;
      for (;;) {
        const backoff = backoffs.get(name) ?? restartBackoff(SERVER_RESTART_POLICY);
        backoffs.set(name, backoff);
        const decision = backoff.onExit(Date.now() - (startedAt.get(name) ?? 0));
        const port = name === "postgres" ? pgState?.port : children[name]?.port;
        if (!decision.restart) {
          log(`[infra] ${name} on 127.0.0.1:${port} exited with ${why}: ${decision.crashes} times in a row soon after its start; giving up`);
          opts.onGiveUp?.(name, why);
          break;
        }
        log(`[infra] ${name} on 127.0.0.1:${port} exited unexpectedly with ${why}; starting it again on the same port in ${decision.delayMs / 1000} s`);
        await sleep(decision.delayMs);
        if (held.has(name)) break;
        startedAt.set(name, Date.now());
        try {
          if (name === "postgres") {
            if (pgState) await startPostgres(pgState);
          } else {
            const st = children[name];
            if (st) await startChild(st);
          }
          log(`[infra] ${name} started again on 127.0.0.1:${port}`);
          break;
        } catch (err) {
          why = (err as Error).message.split("\n")[0] ?? "an error";
        }
      }
      restarting.delete(name);
    })();
  };
  let pgTimer: NodeJS.Timeout | undefined;
  if (opts.supervise) {
    // pg_ctl runs the postmaster as a daemon of its own: looked at rather than waited for.
    pgTimer = setInterval(() => {
      if (!pgState?.running || held.has("postgres") || restarting.has("postgres")) return;
      const pid = postmasterPid(pgState);
      if (pid !== undefined && pidRunning(pid)) return;
      pgState.running = false;
      died("postgres", "its postmaster gone");
    }, POSTGRES_CHECK_MS);
    pgTimer.unref();
  }

  try {
    const bins = need.length > 0 ? await ensureSome(need, log) : {};
    // A reserved port is never handed out twice while it is held (ports.ts).
    const pickPort = async (name: ServerName | undefined): Promise<{ port: number; fixed: boolean }> => {
      const fixed = name && opts.ports?.[name];
      if (fixed !== undefined) {
        // Reserved too when it can be (another run holding it would find it in use anyway).
        if (reserveThisPort(fixed)) reserved.add(fixed);
        return { port: fixed, fixed: true };
      }
      const preferred = name && opts.preferredPorts?.[name];
      if (preferred && reserveThisPort(preferred)) {
        reserved.add(preferred);
        return { port: preferred, fixed: false };
      }
      const port = await freePort();
      reserved.add(port);
      return { port, fixed: false };
    };
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
      const { port, fixed } = await pickPort("postgres");
      const password = localSecret(dataDir, "postgres-password");
      const st: PgState = {
        password: password.value,
        passwordNew: password.created,
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
          await startPostgres(st);
          startedAt.set("postgres", Date.now());
          break;
        } catch (err) {
          if (fixed || attempt >= 2 || !inUse(err)) throw err;
          st.port = (await pickPort(undefined)).port;
        }
      }
      await withClient(pgUrl(st, "postgres"), async (c) => {
        const r = await c.query("select 1 from pg_database where datname = 'svc'");
        if (r.rowCount === 0) await c.query("create database svc");
      });
      log(`[infra] postgres ready on 127.0.0.1:${st.port} (data ${st.data})`);
    }

    // Redis and NATS
    for (const name of ["redis", "nats"] as const) {
      if (!managed[name]) continue;
      const bin = name === "redis" ? bins.redisServer : bins.natsServer;
      const { port, fixed } = await pickPort(name);
      const st: ChildState = {
        spec: name === "redis" ? redisServer : natsServer,
        name,
        bin: bin ?? "",
        port,
        dir: join(dataDir, name),
        logFile: join(dataDir, "logs", `${name}.log`),
        pidFile: join(dataDir, `${name}.pid`),
        password: localSecret(dataDir, `${name}-password`).value,
        child: undefined,
        exited: undefined,
        onUnexpectedExit: (how) => died(name, how),
      };
      children[name] = st;
      await killStale(st, log);
      for (let attempt = 0; ; attempt++) {
        if (!(await portReady(name, st.port, fixed, attempt))) {
          st.port = (await pickPort(undefined)).port;
          continue;
        }
        try {
          await startChild(st);
          startedAt.set(name, Date.now());
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

  const databaseUrl = external.postgres ?? (pgState ? pgUrl(pgState, "svc") : "");
  const adminDatabaseUrl = external.postgres ? withDatabase(external.postgres, "postgres") : pgState ? pgUrl(pgState, "postgres") : "";

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
    redisUrl: external.redis ?? `redis://:${encodeURIComponent(children.redis?.password ?? "")}@127.0.0.1:${children.redis?.port}`,
    natsUrl: external.nats ?? `nats://${NATS_USER}:${encodeURIComponent(children.nats?.password ?? "")}@127.0.0.1:${children.nats?.port}`,
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
      clearInterval(pgTimer);
      stopping ??= stopAll();
      return stopping;
    },
    async stopServer(name) {
      requireManaged(name);
      held.add(name);
      reaper?.forget(reaperKey(name));
      if (name === "postgres") {
        if (pgState) await pgStop(pgState, "fast");
        return;
      }
      const st = children[name];
      if (st) await childStop(st);
      log(`[infra] ${name} stopped`);
    },
    async startReadReplica() {
      requireManaged("postgres");
      if (!pgState) throw new Error("no postgres of ours to replicate");
      const port = await reservePort();
      reserved.add(port);
      const st = await pgStartReplica(pgState, join(pgState.home, `replica-${port}`), port, timeoutMs, log);
      replicas.add(st);
      return {
        databaseUrl: (db: string) => pgUrl(st, db),
        stop: async () => {
          replicas.delete(st);
          await pgStop(st, "fast");
        },
      };
    },
    async startServer(name) {
      requireManaged(name);
      if (name === "postgres") {
        held.delete(name);
        if (pgState && !pgState.running) {
          await startPostgres(pgState);
          log(`[infra] postgres started again on 127.0.0.1:${pgState.port}`);
        }
        return;
      }
      const st = children[name];
      held.delete(name);
      if (st && !st.child) {
        await startChild(st);
        log(`[infra] ${name} started again on 127.0.0.1:${st.port}`);
      }
    },
  };
}
export { CEPH_PACKAGES, startObjectStore, type ObjectStore, type ObjectStoreOptions } from "./object-store.js";
