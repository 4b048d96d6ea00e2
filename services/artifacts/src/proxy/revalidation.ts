import type { FastifyBaseLogger } from "fastify";
import type { Upstreams } from "./file-fetch.js";
import type { SingleFlight } from "./single-flight.js";

/** What revalidation needs of a cached metadata row (an npm packument's, a PyPI page's, a maven-metadata.xml's). */
export interface CachedRow {
  fetchedAt: Date;
}

/** One cached document past its time to live, as its service describes it to `revalidate`. */
export interface Revalidation<R extends CachedRow, T> {
  /** The row read before (past its time to live), or none. */
  row: R | undefined;
  /** Names the flight in this process and the lock across nodes: the service's kind, the repository, the document. */
  key: readonly string[];
  /** The row as Postgres holds it now, read again under the lock. */
  reread: () => Promise<R | undefined>;
  /** How long a row is fresh (a remembered miss has a time to live of its own). */
  ttlOf: (row: R) => number;
  /** Whether a row holds a copy that may be served stale (a remembered miss does not). */
  hasCopy: (row: R) => boolean;
  /** The row answered, stale (Warning 110, Age) or not. */
  answer: (row: R, stale: boolean) => T;
  /** Asks the upstream (conditionally, when `row` holds a copy). */
  refresh: (row: R | undefined) => Promise<T>;
  /** Named in the log line of a background revalidation that failed. */
  about: Record<string, unknown>;
  /**
   * What the refresh left under way after its answer (the row's write): the lock is held until
   * it settles, so another node waiting for it reads the row written, but the callers here are
   * answered at once. It logs its own failure.
   */
  settling?: () => Promise<unknown> | undefined;
}

/**
 * The revalidation of proxied metadata past svc.proxy.metadata-ttl, shared by the npm
 * packuments and the other formats' documents: once in a process (single-flight) and once
 * across nodes (the proxy lock; under it, a row another node wrote meanwhile is taken as it is);
 * within svc.proxy.metadata-stale-while-revalidate after the time to live, the cached copy is
 * answered at once and the revalidation goes on in the background for the next request.
 */
export function revalidationFactory<T>(deps: { flights: SingleFlight<T>; upstreams: Pick<Upstreams, "exclusive">; staleMs: () => number; now: () => number; log: Pick<FastifyBaseLogger, "warn"> }) {
  return async <R extends CachedRow>(r: Revalidation<R, T>): Promise<T> => {
    const age = (row: R) => deps.now() - row.fetchedAt.getTime();
    const refreshing = deps.flights.run(
      r.key.join("\0"),
      () =>
        new Promise<T>((resolve, reject) => {
          deps.upstreams
            .exclusive(async () => {
              const current = await r.reread();
              if (current && (!r.row || current.fetchedAt.getTime() > r.row.fetchedAt.getTime()) && age(current) < r.ttlOf(current)) return resolve(r.answer(current, false));
              resolve(await r.refresh(current ?? r.row));
              await r.settling?.();
            }, ...r.key)
            .catch(reject);
        }),
    );
    if (r.row && r.hasCopy(r.row) && age(r.row) < r.ttlOf(r.row) + deps.staleMs()) {
      refreshing.catch((err: unknown) => deps.log.warn({ err, ...r.about }, "proxy: a background revalidation of cached metadata failed; the cached copy is served meanwhile"));
      return r.answer(r.row, true);
    }
    return refreshing;
  };
}
