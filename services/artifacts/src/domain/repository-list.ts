import type { Logger } from "pino";
import type { MetadataStore } from "../store/metadata-store.js";

const REFRESH_MS = 5000;

export interface RepositoryListDeps {
  metadata: Pick<MetadataStore, "repositoryNames">;
  /** Prepares the file store for repositories it has not seen yet. */
  files: { init(repositories: string[]): Promise<void> };
  log: Pick<Logger, "warn">;
  refreshMs?: number;
}

/**
 * The repositories this process serves. Repositories created by another replica become
 * visible here within seconds, through a refresh that never stops the process (unref'd).
 */
export function repositoryListFactory(deps: RepositoryListDeps) {
  let names = new Set<string>();
  return {
    names: () => names,
    async start(): Promise<void> {
      names = new Set(await deps.metadata.repositoryNames());
      await deps.files.init([...names]);
      const refresh = setInterval(() => {
        deps.metadata
          .repositoryNames()
          .then(async (fresh) => {
            const added = fresh.filter((n) => !names.has(n));
            if (added.length) await deps.files.init(added);
            names = new Set(fresh);
          })
          .catch((err) => deps.log.warn({ err }, "could not refresh the repository list"));
      }, deps.refreshMs ?? REFRESH_MS);
      refresh.unref();
    },
  };
}
