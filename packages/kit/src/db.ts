import { createHash } from "node:crypto";
import { Kysely, Migrator, PostgresDialect, SingleConnectionProvider, sql, type DatabaseConnection, type Driver, type Migration } from "kysely";
import pg from "pg";

/**
 * Each service owns one Postgres schema and migrates it at start. Migrations run under a
 * session advisory lock keyed by the schema, so several processes starting at once apply
 * them exactly once and never race on CREATE SCHEMA.
 */
/**
 * A pool of at most `max` connections: `configured` (svc.database-pool-size) when it is set, else
 * the service's own default (`max`, 10 unless given).
 */
export function createDb<DB>(databaseUrl: string, opts: { max?: number; configured?: number; applicationName?: string } = {}): { db: Kysely<DB>; pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: opts.configured || (opts.max ?? 10), application_name: opts.applicationName ?? "svc" });
  // An idle client that loses its server emits 'error'; without a listener it would crash the process.
  pool.on("error", () => {});
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return { db, pool };
}

/** What kysely counts as affected rows (its pg driver's rule). */
const AFFECTS_ROWS = new Set(["INSERT", "UPDATE", "DELETE", "MERGE"]);

/** The driver of a Kysely bound to one client: it has no connections of its own to hand out. */
const NO_DRIVER: Driver = {
  init: async () => {},
  acquireConnection: () => Promise.reject(new Error("a Kysely bound to one client (kyselyOn) opens no transaction or connection of its own")),
  beginTransaction: async () => {},
  commitTransaction: async () => {},
  rollbackTransaction: async () => {},
  releaseConnection: async () => {},
  destroy: async () => {},
};
const BOUND_DIALECT = new PostgresDialect({ pool: async () => Promise.reject(new Error("unused")) });

/**
 * A Kysely whose every query runs on `client`, a connection the caller took from the pool and
 * drives itself: it sends messages of several statements on the raw client (whose several
 * results kysely would drop) and lets kysely-built queries run in the same transaction. Built
 * on `db`'s executor, so its plugins and schema apply.
 */
export function kyselyOn<DB>(db: Kysely<DB>, client: pg.ClientBase): Kysely<DB> {
  const connection: DatabaseConnection = {
    async executeQuery(q) {
      const r = await client.query(q.sql, [...q.parameters]);
      return { rows: r.rows ?? [], numAffectedRows: AFFECTS_ROWS.has(r.command) ? BigInt(r.rowCount ?? 0) : undefined };
    },
    streamQuery() {
      throw new Error("a Kysely bound to one client (kyselyOn) does not stream");
    },
  };
  const executor = db.getExecutor().withConnectionProvider(new SingleConnectionProvider(connection));
  return new Kysely<DB>({ config: { dialect: BOUND_DIALECT }, dialect: BOUND_DIALECT, driver: NO_DRIVER, executor });
}

function lockId(schema: string): bigint {
  return createHash("sha256").update(`svc-migrate:${schema}`).digest().readBigInt64BE(0);
}

export async function migrate(
  db: Kysely<unknown>,
  pool: pg.Pool,
  schema: string,
  migrations: Record<string, Migration>,
): Promise<string[]> {
  const client = await pool.connect();
  try {
    await client.query("select pg_advisory_lock($1)", [lockId(schema).toString()]);
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
    const migrator = new Migrator({
      db,
      migrationTableSchema: schema,
      migrationTableName: "migrations",
      migrationLockTableName: "migrations_lock",
      provider: { getMigrations: async () => migrations },
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
    return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
  } finally {
    await client.query("select pg_advisory_unlock($1)", [lockId(schema).toString()]).catch(() => {});
    client.release();
  }
}

/** Whether the server is a hot standby (a read replica): it answers reads and refuses every write. */
export async function isReadReplica(pool: pg.Pool): Promise<boolean> {
  return (await pool.query<{ r: boolean }>("select pg_is_in_recovery() as r")).rows[0]?.r === true;
}

/**
 * On a read replica, where nothing can be migrated: the migrations of `migrations` the schema
 * has not had (its primary runs them). Empty when the schema is as this version expects.
 */
export async function pendingMigrations(pool: pg.Pool, schema: string, migrations: Record<string, Migration>): Promise<string[]> {
  const table = await pool.query<{ t: string | null }>("select to_regclass($1) as t", [`${pg.escapeIdentifier(schema)}.migrations`]);
  if (!table.rows[0]?.t) return Object.keys(migrations).sort();
  const applied = new Set((await pool.query<{ name: string }>(`select name from ${pg.escapeIdentifier(schema)}.migrations`)).rows.map((r) => r.name));
  return Object.keys(migrations).filter((m) => !applied.has(m)).sort();
}

/** Health check: a value, never a throw. */
export async function pingDb(pool: pg.Pool, timeoutMs = 2000): Promise<{ ok: true } | { ok: false; error: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      pool.query("select 1"),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("timed out")), timeoutMs);
      }),
    ]);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}
