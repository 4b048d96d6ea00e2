import { AsyncLocalStorage } from "node:async_hooks";

/** What a path holds, as a download needs it (routes/artifact-answer.ts's ArtifactRow). */
export interface IndexRow {
  repository: string;
  path: string;
  size: number;
  sha256: string;
  updated: Date;
  /** Why a policy holds the file (a download is refused); null or absent: not held. */
  heldReason?: string | null;
}

/**
 * Told of a change to the path index: one path, or (no path) a whole repository. `now` is what
 * the path holds once the change has committed, when the change says (a publish's row).
 */
export type IndexChangeListener = (repository: string, path?: string, now?: IndexRow) => void;

type Change = [repository: string, path: string | undefined, now: IndexRow | undefined];

/**
 * Tells whoever listens (the read cache, domain/index-read-cache.ts) of every change this
 * process makes to the path index, twice: as the change is made, and again once the change
 * has committed. The second telling is what matters to a cache: a read that started before the
 * commit may have seen the old row, and only a telling after the commit is sure to come after
 * that read. A change made inside `transaction` is told again when the transaction ends (commit
 * or rollback); one made outside any (a statement that commits on its own) by `change` itself,
 * once its statement has run. A publish's row goes with the second telling, once its
 * transaction committed (a path just published is often downloaded next).
 */
export function indexChangeTracker() {
  const scope = new AsyncLocalStorage<Change[]>();
  const listeners: IndexChangeListener[] = [];
  const tell = (repository: string, path?: string, now?: IndexRow) => {
    for (const l of listeners) l(repository, path, now);
  };
  return {
    listen(listener: IndexChangeListener): void {
      listeners.push(listener);
    },
    /** Runs a transaction; the changes made in it are told again once it has ended. */
    async transaction<T>(run: () => Promise<T>): Promise<T> {
      const changes: Change[] = [];
      let committed = false;
      try {
        const result = await scope.run(changes, run);
        committed = true;
        return result;
      } finally {
        for (const [repository, path, now] of changes) tell(repository, path, committed ? now : undefined);
      }
    },
    /**
     * A change as it is made (a statement sent with a transaction's COMMIT, say); `now`, what the
     * path will hold, is told only after the transaction committed.
     */
    changing(repository: string, path?: string, now?: IndexRow): void {
      tell(repository, path);
      scope.getStore()?.push([repository, path, now]);
    },
    /** Runs the statement that makes a change: told before, and after it unless a transaction will tell. */
    async change<T>(repository: string, path: string | undefined, statement: () => Promise<T>): Promise<T> {
      tell(repository, path);
      const changes = scope.getStore();
      try {
        return await statement();
      } finally {
        if (changes) changes.push([repository, path, undefined]);
        else tell(repository, path);
      }
    },
  };
}

export type IndexChangeTracker = ReturnType<typeof indexChangeTracker>;
