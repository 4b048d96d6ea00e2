/** One read cache of this gateway node, as GET /api/caches answers it. */
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

interface Part {
  stats(): { hits: number; misses: number; size: number; ttlMs: number };
  clear(): void | Promise<void>;
}

/**
 * Every read cache of this node by name, and "Clear caches on this node": empties them all,
 * then tells every other gateway (the `caches` control subject) to drop what it remembers of
 * credentials, people and sessions; their other caches expire on their own time to live.
 */
export function cacheReportFactory(deps: { parts: (Part & { name: string; description: string })[]; announce: () => boolean }) {
  return {
    list(): CacheStats[] {
      return deps.parts.map((p) => {
        const { hits, misses, size, ttlMs } = p.stats();
        return { name: p.name, description: p.description, ttlSeconds: Math.round(ttlMs / 1000), hits, misses, size };
      });
    },
    /** Whether the other gateways were told (false when NATS is not connected). */
    async clear(): Promise<{ cleared: string[]; announced: boolean }> {
      await Promise.all(deps.parts.map((p) => p.clear()));
      return { cleared: deps.parts.map((p) => p.name), announced: deps.announce() };
    },
  };
}

export type CacheReport = ReturnType<typeof cacheReportFactory>;
