import type { FastifyBaseLogger } from "fastify";
import type pg from "pg";
import { lockKey } from "../store/metadata-store.js";
import { readSource, type SourceRead } from "./advisory-sources.js";
import type { Advisory } from "./osv-records.js";
import type { GateStore } from "./gate-store.js";

export interface AdvisoryRefreshDeps {
  pool: pg.Pool;
  store: Pick<GateStore, "replaceSource" | "sourceFailed" | "keepOnly" | "sources">;
  /** svc.advisories.sources. */
  sources: readonly string[];
  /** svc.advisories.refresh. */
  refreshMs: number;
  log: FastifyBaseLogger;
  /** Records new or changed since the last load: stored versions are checked against them. */
  changed: (advisories: Advisory[]) => Promise<void>;
  read?: (source: string) => Promise<SourceRead>;
}

const LOCK = lockKey("gate-advisories-refresh");

/**
 * Loads svc.advisories.sources into Postgres at start and every svc.advisories.refresh, on one
 * node at a time: a session advisory lock (tried, never waited for) picks the node, and a node
 * that finds the data loaded lately by another leaves it. A source that cannot be read keeps
 * its last good rows; its state says why (GET /api/advisories/status, the posture).
 */
export function advisoryRefreshFactory(deps: AdvisoryRefreshDeps) {
  const read = deps.read ?? readSource;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;

  /** One load of every source, when this node takes the lock; false when another node holds it. */
  const refresh = async (opts: { force?: boolean } = {}): Promise<boolean> => {
    const client = await deps.pool.connect();
    try {
      const taken = (await client.query(`select pg_try_advisory_lock(${LOCK}) as ok`)).rows[0]?.ok === true;
      if (!taken) return false;
      try {
        const states = await deps.store.sources();
        const byName = new Map(states.map((s) => [s.source, s]));
        await deps.store.keepOnly(deps.sources);
        const changed: Advisory[] = [];
        for (const source of deps.sources) {
          const last = byName.get(source)?.attemptedAt.getTime();
          // Another node loaded it lately (each node's timer fires; one load per period is enough).
          if (!opts.force && last !== undefined && Date.now() - last < deps.refreshMs * 0.9) continue;
          try {
            const got = await read(source);
            changed.push(...(await deps.store.replaceSource(source, got.advisories)));
            deps.log.info({ source: where(source), records: got.advisories.length, skipped: got.skipped }, "loaded advisory data");
          } catch (err) {
            const why = (err as Error).message ?? String(err);
            deps.log.warn({ source: where(source), err }, "an advisory source could not be read: its last good data stays in use");
            await deps.store.sourceFailed(source, why.slice(0, 500));
          }
        }
        if (changed.length > 0) await deps.changed(changed);
        return true;
      } finally {
        await client.query(`select pg_advisory_unlock(${LOCK})`);
      }
    } finally {
      client.release();
    }
  };

  const tick = () => {
    if (stopped || running) return;
    running = refresh()
      .catch((err: unknown) => deps.log.error({ err }, "advisory refresh failed"))
      .finally(() => {
        running = undefined;
      });
  };

  return {
    refresh,
    /** A load now (in the background) and one every svc.advisories.refresh. */
    start() {
      if (deps.sources.length === 0) return;
      tick();
      timer = setInterval(tick, Math.max(deps.refreshMs, 1000));
      timer.unref();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

/** A source as logs name it: a URL without its query (a token may ride there). */
const where = (source: string) => source.replace(/[?#].*$/, "");
