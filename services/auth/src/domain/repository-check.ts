import type { Logger } from "pino";
import { parseScope } from "@svc/grants";

/** How long a fetched repository list answers for names it holds. */
const FRESH_MS = 5_000;
/** A name not in the list is asked about again, but not more often than this: a typo repeated in a loop must not flood artifacts. */
const RECHECK_MS = 1_000;

export interface RepositoryCheckDeps {
  /** The repository names the artifacts service serves; throws when it cannot be asked. */
  repositoryNames: () => Promise<string[]>;
  log: Pick<Logger, "debug">;
  now?: () => number;
}

/**
 * Tells a grant's caller that its scope names a repository the deployment does not have (yet).
 * A grant ahead of its repository is legitimate, so this never refuses: it only words a warning.
 * The list is the artifacts service's, cached briefly; a name not in it is checked again against
 * a fresh list, so a repository created a moment ago does not warn. When artifacts cannot be
 * asked there is no warning at all (logged at debug): the grant does not depend on it.
 */
export function repositoryCheckFactory(deps: RepositoryCheckDeps) {
  const now = deps.now ?? Date.now;
  let cached: { names: ReadonlySet<string>; at: number } | undefined;
  let inFlight: Promise<ReadonlySet<string> | undefined> | undefined;

  const fetchNames = (): Promise<ReadonlySet<string> | undefined> => {
    inFlight ??= deps
      .repositoryNames()
      .then((names) => {
        cached = { names: new Set(names), at: now() };
        return cached.names;
      })
      .catch((err: unknown) => {
        deps.log.debug({ err }, "could not ask the artifacts service for its repositories: grant answered without a repository check");
        return undefined;
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };

  const exists = async (repository: string): Promise<boolean | undefined> => {
    const age = cached ? now() - cached.at : Infinity;
    if (cached && age < FRESH_MS && cached.names.has(repository)) return true;
    if (cached && age < RECHECK_MS) return false;
    const names = await fetchNames();
    return names ? names.has(repository) : undefined;
  };

  return {
    /** Warnings for a grant at `scope` (already validated): empty for `*`, wildcard and known repositories, and when artifacts cannot be asked. */
    async warningsFor(scope: string): Promise<string[]> {
      const parsed = parseScope(scope);
      if (!parsed.ok || parsed.scope.repository === "*") return [];
      const repository = parsed.scope.repository;
      return (await exists(repository)) === false ? [`repository "${repository}" does not exist (yet): check the name`] : [];
    },
  };
}

export type RepositoryCheck = ReturnType<typeof repositoryCheckFactory>;

/** A grant as answered: the stored grant, and `warnings` only when there is something to say. */
export async function withWarnings<T extends object>(grant: T, warnings: Promise<string[]> | undefined): Promise<T & { warnings?: string[] }> {
  const w = warnings ? await warnings : [];
  return w.length > 0 ? { ...grant, warnings: w } : grant;
}
