import type { Logger } from "pino";
import type { MetadataStore } from "../store/metadata-store.js";

const REFRESH_MS = 5000;

export interface RepositoryListDeps {
  metadata: Pick<MetadataStore, "repositories" | "upstreams">;
  log: Pick<Logger, "warn">;
  refreshMs?: number;
}

/**
 * The repositories this process serves. Repositories created by another replica become
 * visible here within seconds, through a refresh that never stops the process (unref'd).
 */
export function repositoryListFactory(deps: RepositoryListDeps) {
  let formats = new Map<string, string>();
  let names = new Set<string>();
  let upstreams = new Map<string, { url: string; sealed: string | null }>();
  /** Re-reads the list now (this replica's own creations and removals are seen at once). */
  const refresh = async (): Promise<void> => {
    const [fresh, proxies] = await Promise.all([deps.metadata.repositories(), deps.metadata.upstreams()]);
    formats = new Map(fresh.map((r) => [r.name, r.format]));
    names = new Set(formats.keys());
    upstreams = new Map(proxies.map((p) => [p.name, { url: p.url, sealed: p.sealed }]));
  };
  return {
    names: () => names,
    /** The format of a repository this process serves, or undefined. */
    formatOf: (name: string): string | undefined => formats.get(name),
    /** A proxy repository's upstream, its credentials still sealed; undefined for a hosted one. */
    upstreamOf: (name: string): { url: string; sealed: string | null } | undefined => upstreams.get(name),
    refresh,
    async start(): Promise<void> {
      await refresh();
      const timer = setInterval(() => {
        refresh().catch((err) => deps.log.warn({ err }, "could not refresh the repository list"));
      }, deps.refreshMs ?? REFRESH_MS);
      timer.unref();
    },
  };
}
export type RepositoryList = ReturnType<typeof repositoryListFactory>;
