import type { FastifyInstance } from "fastify";
import type { Kysely, Migration } from "kysely";
import type pg from "pg";
import type { Logger } from "pino";
import { AUDIT_SCHEMA, auditMigrations, auditWriterFactory, type AuditDatabase, type AuditSink, type AuditSpec } from "./audit-trail.js";
import { createDb, isReadReplica, migrate, pendingMigrations } from "./db.js";
import { createLogger, type LogRing } from "./logger.js";
import { createBus, type Bus } from "./messaging.js";
import { createMetrics, type ServiceMetrics } from "./metrics.js";
import { startNodeAgent, type NodeAgentSettings } from "./node-agent.js";
import { SETTINGS, unknownEnvironmentSettings, type Settings } from "./settings.js";
import { listenOnSocket } from "./socket-listener.js";

/**
 * One way to start a service, so each `main.ts` holds only the service's own wiring:
 *
 *   1. settings, or refuse to start (exit 78 with the reason on stderr);
 *   2. logger and metrics registry;
 *   3. with a database: connect, migrate under the schema's lock (exit 1 when that fails);
 *   4. NATS (connects in the background) and the node agent;
 *   5. the service's wiring, which builds the app;
 *   6. listen, `onListening`, the "ready" line, and the signal handlers.
 *
 * Shutdown ORDER, the same for every service (SIGTERM/SIGINT, bounded by svc.shutdown-grace):
 *   the HTTP server (stops accepting, finishes requests in flight)
 *   -> the service's own closers, in the order it lists them (workers, then the clients they use)
 *   -> the node agent -> NATS -> the database.
 * Workers stop before NATS and the database because they still publish and write while they
 * finish; the agent goes before NATS so no heartbeat is attempted on a draining connection.
 */

/** What boot reads from every service's settings. */
export type BootSettings = Pick<Settings, "tenant" | "natsUrl" | "host" | "port" | "logLevel" | "shutdownGraceMs"> & Partial<Pick<Settings, "socket">>;

/** A service's own Postgres schema; `DB` types the Kysely handle its wiring receives. */
export interface DatabaseSpec<DB> {
  schema: string;
  migrations: Record<string, Migration>;
  /** Pool size when svc.database-pool-size is not set (10 unless given). */
  max?: number;
  /**
   * Whether the service may run on a read replica of its database (a hot standby) with these
   * settings: undefined when it may (it then checks the schema instead of migrating it, and the
   * wiring is told: `replica`), else why not, naming the setting. A service without it refuses
   * to start on a replica.
   */
  replica?: (config: never) => string | undefined;
  /** Carries `DB` to the wiring's context; never set at run time. */
  readonly __db?: DB;
}

/** Declares the service's schema and its row types for `bootService`. */
export function postgresSchema<DB>(spec: Omit<DatabaseSpec<DB>, "__db">): DatabaseSpec<DB> {
  return spec;
}

/** What every service's wiring gets. */
export interface BootContext<C> {
  config: C;
  log: Logger;
  ring: LogRing;
  metrics: ServiceMetrics;
  bus: Bus;
}

/** What a service with a database gets besides. */
export interface DatabaseContext<DB> {
  db: Kysely<DB>;
  pool: pg.Pool;
  /** The database is a read replica (DatabaseSpec.replica): write nothing to it. */
  replica: boolean;
}

/** What the wiring hands back to boot. */
export interface Wiring {
  app: FastifyInstance;
  /** Fields of the "ready" line. */
  ready?: Record<string, unknown>;
  /** Started once the server listens (work that should only begin when the service answers). */
  onListening?: () => void;
  /** The service's own workers and clients, closed in this order after the HTTP server and before the agent, NATS and the database. */
  closers?: Array<() => unknown>;
  /** Status the heartbeat reports besides `nats`. */
  status?: () => Record<string, string>;
}

type Shutdown = () => unknown;

/** The settings the node agent digests for the posture: required unless the config holds them itself. */
type NodeSettingsOption<C> = C extends NodeAgentSettings ? { nodeSettings?: (config: C) => NodeAgentSettings } : { nodeSettings: (config: C) => NodeAgentSettings };

type CommonSpec<C extends BootSettings> = NodeSettingsOption<C> & {
  /** How this service names its changes in the audit trail (a service with a database records them). */
  audit?: AuditSpec;
  /** Short service name: logs, metrics, NATS connection name, the refusal and ready lines. */
  name: string;
  loadConfig: () => C;
  /** Default: "<name> service ready". */
  readyMessage?: string;
};

export type ServiceSpec<C extends BootSettings> = CommonSpec<C> & {
  wire: (ctx: BootContext<C>) => Wiring | Promise<Wiring>;
};

/** What boot reads besides from a service with a database (svc.database-url, svc.database-pool-size). */
export type DbSettings = BootSettings & Pick<Settings, "databaseUrl" | "databasePoolSize">;

export type DatabaseServiceSpec<C extends DbSettings, DB> = CommonSpec<C> & {
  database: DatabaseSpec<DB>;
  wire: (ctx: BootContext<C> & DatabaseContext<DB>) => Wiring | Promise<Wiring>;
};

/** Both specs as the implementation sees them (method syntax: parameters compare both ways). */
interface EitherSpec {
  name: string;
  audit?: AuditSpec;
  readyMessage?: string;
  database?: DatabaseSpec<unknown>;
  loadConfig(): BootSettings;
  nodeSettings?(config: BootSettings): NodeAgentSettings;
  wire(ctx: BootContext<BootSettings> & Partial<DatabaseContext<unknown>>): Wiring | Promise<Wiring>;
}

export async function bootService<C extends DbSettings, DB>(spec: DatabaseServiceSpec<C, DB>): Promise<void>;
export async function bootService<C extends BootSettings>(spec: ServiceSpec<C>): Promise<void>;
export async function bootService(spec: EitherSpec): Promise<void> {
  let config: BootSettings;
  try {
    config = spec.loadConfig();
  } catch (err) {
    refuseStart(spec.name, err);
  }
  const { log, ring } = createLogger(spec.name, config.logLevel);
  // A misspelt SVC_ variable would otherwise be ignored without a word (-D and file typos refuse).
  for (const line of unknownEnvironmentSettings(process.env)) log.warn(line);
  const metrics = createMetrics(spec.name);

  let database: DatabaseContext<unknown> | undefined;
  if (spec.database) {
    const { databaseUrl, databasePoolSize } = config as DbSettings;
    const { db, pool } = createDb<unknown>(databaseUrl, { configured: databasePoolSize, applicationName: `svc-${spec.name}`, max: spec.database.max });
    let replica = false;
    try {
      replica = await isReadReplica(pool);
      if (!replica) {
        const applied = await migrate(db, pool, spec.database.schema, spec.database.migrations);
        // The audit trail every service with changeable state appends to (audit-trail.ts).
        applied.push(...(await migrate(db, pool, AUDIT_SCHEMA, auditMigrations)));
        if (applied.length) log.info({ applied }, "applied migrations");
      }
    } catch (err) {
      log.fatal({ err }, `could not migrate the ${spec.name} schema`);
      process.exit(1);
    }
    if (replica) {
      // A hot standby: nothing can be written, so nothing is migrated; the primary's service does it.
      const refused = spec.database.replica ? spec.database.replica(config as never) : `the ${spec.name} service writes to its database: point it at the primary`;
      if (refused !== undefined) refuseStart(spec.name, new Error(`svc.database-url is a read replica (its server is in recovery), and ${refused}`));
      const pending = await pendingMigrations(pool, spec.database.schema, spec.database.migrations);
      if (pending.length > 0) {
        refuseStart(spec.name, new Error(`svc.database-url is a read replica whose ${spec.database.schema} schema lacks ${pending.length} migration(s) of this version (${pending.slice(0, 3).join(", ")}${pending.length > 3 ? ", ..." : ""}): start this version against the primary first, which migrates it`));
      }
      log.info("svc.database-url is a read replica: the schema is checked, not migrated, and nothing is written to it");
    }
    database = { db, pool, replica };
  }

  const bus = createBus({ url: config.natsUrl, tenant: config.tenant, name: spec.name, log });
  // The wiring's own status is known only once it ran; the agent starts first so the node shows up early.
  let status: Wiring["status"];
  const agent = startNodeAgent({
    bus,
    // Without nodeSettings the types guarantee the config holds them.
    settings: spec.nodeSettings ? spec.nodeSettings(config) : (config as unknown as NodeAgentSettings),
    metrics,
    ring,
    status: () => ({ nats: bus.connected() ? "up" : "down", ...status?.() }),
  });
  const db = database?.db;
  const last: Shutdown[] = [async () => agent.stop(), () => bus.close(), ...(db ? [() => db.destroy()] : [])];

  // An error naming a setting (`setting`, as the blob store's BlobStoreMisconfigured does: a missing
  // bucket, refused credentials) is a start-up refusal like a bad setting, not a crash.
  const wiring = await Promise.resolve().then(() => spec.wire({ config, log, ring, metrics, bus, ...database })).catch((err: unknown) => {
    if (err instanceof Error && typeof (err as { setting?: unknown }).setting === "string") refuseStart(spec.name, err);
    throw err;
  });
  status = wiring.status;
  // A replica writes nothing, the audit trail included (its changes are refused anyway).
  const sink = (wiring.app as { auditSink?: AuditSink }).auditSink;
  if (sink && database && !database.replica) {
    sink.service = spec.name;
    sink.spec = spec.audit ?? {};
    sink.writer = auditWriterFactory(database.db as Kysely<AuditDatabase>);
  }

  await wiring.app.listen({ host: config.host, port: config.port });
  // svc.socket, on the services the catalog says read it (a gateway on the same host reaches them there).
  const socketPath = (SETTINGS.socket.readBy as readonly string[]).includes(spec.name) ? config.socket : undefined;
  const socket = socketPath ? await listenOnSocket(wiring.app, socketPath).catch((err: unknown) => refuseStart(spec.name, err)) : undefined;
  wiring.onListening?.();
  log.info(socket ? { ...wiring.ready, socket: socket.path } : (wiring.ready ?? {}), spec.readyMessage ?? `${spec.name} service ready`);

  onShutdown(log, [() => Promise.all([wiring.app.close(), socket?.close()]), ...(wiring.closers ?? []), ...last], config.shutdownGraceMs);
}

/**
 * Bounded graceful shutdown on SIGTERM/SIGINT: runs `steps` in order (a failed step is logged
 * and the next one runs), then exits 0; after `timeoutMs` (svc.shutdown-grace) whatever is
 * still running is cut and the process exits 1.
 */
export function onShutdown(log: Logger, steps: Array<() => unknown>, timeoutMs: number): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    process.exit(await stopInOrder(log, steps, timeoutMs));
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));
}

/** Runs the steps one after another; resolves the exit code: 0, or 1 when the grace ran out first. */
export async function stopInOrder(log: Logger, steps: Array<() => unknown>, timeoutMs: number): Promise<0 | 1> {
  let timer: NodeJS.Timeout | undefined;
  let current: (() => unknown) | undefined;
  const graceOver = new Promise<1>((resolve) => {
    timer = setTimeout(() => {
      // The step that held it, as its source reads (`() => bus.close()`): what an operator looks into.
      log.error({ step: current ? String(current).slice(0, 120) : undefined }, "shutdown took too long; exiting");
      resolve(1);
    }, timeoutMs);
    timer.unref();
  });
  const done = (async () => {
    for (const step of steps) {
      current = step;
      try {
        await step();
      } catch (err) {
        log.warn({ err }, "shutdown step failed");
      }
    }
    return 0 as const;
  })();
  try {
    return await Promise.race([done, graceOver]);
  } finally {
    clearTimeout(timer);
  }
}

/** Prints a start-up refusal (bad settings and the like) and exits 78 (EX_CONFIG). */
export function refuseStart(service: string, err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`${service}: refusing to start: ${message}\n`);
  process.exit(78);
}
