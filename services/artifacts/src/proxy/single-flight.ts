/**
 * One in-flight fetch per key within a process: the first caller starts it, every later caller
 * for the same key, while it runs, shares the same promise. The entry is dropped when it
 * settles (success or failure), so a failed fetch is tried again by the next caller and never
 * cached as a miss. Across nodes the proxy adds a Postgres advisory lock around the fetch
 * (npm: formats/npm/npm-proxy-service.ts; docs/integration/npm.md, "Proxy repositories").
 */
export class SingleFlight<T> {
  private readonly running = new Map<string, Promise<T>>();

  /** Runs `fetch` for `key` unless one is running already; answers its result either way. */
  run(key: string, fetch: () => Promise<T>): Promise<T> {
    const current = this.running.get(key);
    if (current) return current;
    const started = (async () => {
      try {
        return await fetch();
      } finally {
        this.running.delete(key);
      }
    })();
    this.running.set(key, started);
    return started;
  }

  /** How many keys have a fetch under way (for metrics and tests). */
  get size(): number {
    return this.running.size;
  }
}
