import type { CacheStats } from "@svc/contracts";

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
