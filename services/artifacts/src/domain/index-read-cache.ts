import type { IndexRow } from "../store/index-changes.js";

/** Where the cache hears of changes made by other processes: artifact events on NATS. */
export interface ChangeFeed {
  /** True while events arrive (the connection is up). */
  connected(): boolean;
  /** How many times the connection was lost so far: a loss may have dropped events. */
  losses(): number;
}

export interface IndexReadCacheDeps {
  /** The index look-up the cache saves (metadata-store findForRead). */
  find: (repository: string, path: string) => Promise<IndexRow | undefined>;
  /** svc.index-cache.ttl: how long an entry is answered from; 0 switches the cache off. */
  ttlMs: number;
  /** Entries kept at most; the oldest go first. */
  maxEntries: number;
  feed: ChangeFeed;
  now?: () => number;
  /** Counts answers from the cache and from Postgres (svc_index_cache_lookups_total). */
  count?: (result: "hit" | "miss" | "off") => void;
}

interface Entry {
  row: IndexRow;
  until: number;
}

const keyOf = (repository: string, path: string) => `${repository}\n${path}`;

/**
 * The index rows of paths downloaded lately, in this process, so that a download does not ask
 * Postgres what a path holds every time (docs/internals/storage.md, "The read cache"). What a
 * path holds changes only through the metadata store, and every change is evicted here:
 * - made by this process: as it is made and again once it has committed (store/index-changes.ts),
 *   so a read that began before the commit cannot put the old row back; a publish's committed
 *   row is kept then (a path just published is often downloaded next);
 * - made by another process: when its artifact event arrives (artifact.published or
 *   artifact.removed, which every change of content sends);
 * - anything else (an event lost, a repair of a row by another replica): after `ttlMs` at most.
 * The cache answers only while events arrive: with NATS away it is bypassed, and it starts
 * empty again once NATS is back (events sent meanwhile never reach it). A path with no row is
 * never cached, so a publish anywhere is served everywhere at once.
 */
export function indexReadCacheFactory(deps: IndexReadCacheDeps) {
  const now = deps.now ?? Date.now;
  const entries = new Map<string, Entry>();
  // Moves on every eviction: a look-up that saw it move may have read a row older than the eviction.
  let epoch = 0;
  let losses = -1;

  /** Whether the cache may answer now; clears it after NATS was away. */
  const live = (): boolean => {
    if (deps.ttlMs <= 0) return false;
    if (!deps.feed.connected()) {
      entries.clear();
      return false;
    }
    const l = deps.feed.losses();
    if (l !== losses) {
      entries.clear();
      losses = l;
    }
    return true;
  };

  const keep = (key: string, row: IndexRow, at: number) => {
    if (entries.size >= deps.maxEntries) {
      const oldest = entries.keys().next();
      if (!oldest.done) entries.delete(oldest.value);
    }
    entries.set(key, { row, until: at + deps.ttlMs });
  };

  const evict = (repository: string, path?: string) => {
    epoch++;
    if (path !== undefined) {
      entries.delete(keyOf(repository, path));
      return;
    }
    const prefix = keyOf(repository, "");
    for (const k of entries.keys()) if (k.startsWith(prefix)) entries.delete(k);
  };

  return {
    /** What a path holds: from the cache while an entry is fresh, else from the index. */
    async find(repository: string, path: string): Promise<{ row: IndexRow | undefined; cached: boolean }> {
      if (!live()) {
        deps.count?.("off");
        return { row: await deps.find(repository, path), cached: false };
      }
      const key = keyOf(repository, path);
      const hit = entries.get(key);
      const at = now();
      if (hit) {
        if (hit.until > at) {
          deps.count?.("hit");
          return { row: hit.row, cached: true };
        }
        entries.delete(key);
      }
      deps.count?.("miss");
      const seen = epoch;
      const seenLosses = losses;
      const row = await deps.find(repository, path);
      // Kept only if nothing was evicted and NATS stayed up meanwhile.
      if (row && seen === epoch && live() && losses === seenLosses) keep(key, row, at);
      return { row, cached: false };
    },
    /** A path's row changed (or a whole repository's, without a path): its entries go. */
    evict,
    /**
     * An artifact.published event arrived: the entry goes unless it is the very row the event
     * announces (this process's own publish, kept as it committed, comes back as an event too).
     */
    published(repository: string, path: string, sha256: string, time: string): void {
      const hit = entries.get(keyOf(repository, path));
      if (hit && hit.row.sha256 === sha256 && hit.row.updated.getTime() === Date.parse(time)) return;
      evict(repository, path);
    },
    /**
     * Told of a change this process made (store/index-changes.ts): evicted, and `committed`, the
     * row a committed publish wrote, kept.
     */
    changed(repository: string, path?: string, committed?: IndexRow): void {
      evict(repository, path);
      if (committed && path !== undefined && live()) keep(keyOf(repository, path), committed, now());
    },
    /** Entries held now (for tests and the metric). */
    size: () => entries.size,
  };
}

export type IndexReadCache = ReturnType<typeof indexReadCacheFactory>;
