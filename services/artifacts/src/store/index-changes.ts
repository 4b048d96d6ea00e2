import { AsyncLocalStorage } from "node:async_hooks";

/** Told of a change to the path index: one path, or (no path) a whole repository. */
export type IndexChangeListener = (repository: string, path?: string) => void;

/**
 * Tells whoever listens (the read cache, domain/index-read-cache.ts) of every change this
 * process makes to the path index, twice: as the change is made, and again once the change
 * has committed. The second telling is what matters to a cache: a read that started before the
 * commit may have seen the old row, and only a telling after the commit is sure to come after
 * that read. A change made inside `transaction` is told again when the transaction ends (commit
 * or rollback); one made outside any (a statement that commits on its own) by `change` itself,
 * once its statement has run.
 */
export function indexChangeTracker() {
  const scope = new AsyncLocalStorage<Array<[string, string | undefined]>>();
  const listeners: IndexChangeListener[] = [];
  const tell = (repository: string, path?: string) => {
    for (const l of listeners) l(repository, path);
  };
  return {
    listen(listener: IndexChangeListener): void {
      listeners.push(listener);
    },
    /** Runs a transaction; the changes made in it are told again once it has ended. */
    async transaction<T>(run: () => Promise<T>): Promise<T> {
      const changes: Array<[string, string | undefined]> = [];
      try {
        return await scope.run(changes, run);
      } finally {
        for (const [repository, path] of changes) tell(repository, path);
      }
    },
    /** A change as it is made (a statement sent with a transaction's COMMIT, say). */
    changing(repository: string, path?: string): void {
      tell(repository, path);
      scope.getStore()?.push([repository, path]);
    },
    /** Runs the statement that makes a change: told before, and after it unless a transaction will tell. */
    async change<T>(repository: string, path: string | undefined, statement: () => Promise<T>): Promise<T> {
      tell(repository, path);
      const changes = scope.getStore();
      try {
        return await statement();
      } finally {
        if (changes) changes.push([repository, path]);
        else tell(repository, path);
      }
    },
  };
}

export type IndexChangeTracker = ReturnType<typeof indexChangeTracker>;
