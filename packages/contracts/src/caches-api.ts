/**
 * The caches API's answers (`GET /api/caches`, `POST /api/caches/clear`), node-local: the
 * gateway node that answers speaks of its own read caches. The gateway builds them; the console
 * and the tests read them.
 */

/** One read cache of a gateway node. */
export interface CacheStats {
  name: string;
  description: string;
  /** How long an entry is kept at most; 0 when the cache is off. */
  ttlSeconds: number;
  /** Answers given from memory since the process started. */
  hits: number;
  /** Answers that had to be asked for (a lookup, a load) since the process started. */
  misses: number;
  /** Entries held now. */
  size: number;
}

/** `GET /api/caches`. */
export interface CachesView {
  node: string;
  caches: CacheStats[];
}
