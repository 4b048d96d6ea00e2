import type { Logger } from "pino";
import type { MetadataStore } from "../store/metadata-store.js";

const REFRESH_MS = 5000;

/** A member of a group repository, as the group asks it: a hosted repository or a proxy one. */
export interface GroupMember {
  name: string;
  type: "hosted" | "proxy";
}

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
  let groups = new Map<string, readonly GroupMember[]>();
  let quotas = new Map<string, number>();
  let scoped = new Set<string>();
  // Refreshes may overlap (the periodic one and a creation's): each applies what it read only if
  // no refresh that started after it has applied already, so a slow read begun before a creation
  // never puts back a list without the repository just created.
  let started = 0;
  let applied = 0;
  /** Re-reads the list now (this replica's own creations and removals are seen at once). */
  const refresh = async (): Promise<void> => {
    const generation = ++started;
    const [fresh, proxies] = await Promise.all([deps.metadata.repositories(), deps.metadata.upstreams()]);
    if (generation < applied) return;
    applied = generation;
    formats = new Map(fresh.map((r) => [r.name, r.format]));
    names = new Set(formats.keys());
    upstreams = new Map(proxies.map((p) => [p.name, { url: p.url, sealed: p.sealed }]));
    const types = new Map(fresh.map((r) => [r.name, r.type]));
    quotas = new Map(fresh.flatMap((r) => (r.quotaBytes === null ? [] : [[r.name, r.quotaBytes] as const])));
    scoped = new Set(fresh.filter((r) => r.scopeFromPath).map((r) => r.name));
    groups = new Map(
      fresh.flatMap((r) => (r.members ? [[r.name, r.members.map((m): GroupMember => ({ name: m, type: types.get(m) === "proxy" ? "proxy" : "hosted" }))] as const] : [])),
    );
  };
  return {
    names: () => names,
    /** The format of a repository this process serves, or undefined. */
    formatOf: (name: string): string | undefined => formats.get(name),
    /** A proxy repository's upstream, its credentials still sealed; undefined for a hosted one. */
    upstreamOf: (name: string): { url: string; sealed: string | null } | undefined => upstreams.get(name),
    /** A group repository's members in order (possibly none); undefined for a hosted or proxy repository. */
    membersOf: (name: string): readonly GroupMember[] | undefined => groups.get(name),
    /** Whether a repository has a storage quota, as of the last refresh (a route's early check is skipped without one). */
    hasQuota: (name: string): boolean => quotas.has(name),
    /** Whether a request without Service-Repository-Name is authorised against this repository (its scopeFromPath), as of the last refresh. */
    scopeFromPath: (name: string): boolean => scoped.has(name),
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
