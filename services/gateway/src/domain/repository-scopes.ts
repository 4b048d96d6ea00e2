import type { Logger } from "pino";
import { ARTIFACTS_INTERNAL, type RepositoryScopeChange, type ScopeFromPathDoc } from "@svc/contracts";
import { internalClient } from "@svc/kit";

/**
 * The repositories whose `scopeFromPath` is on (`PATCH /api/repositories/<name>
 * {"scopeFromPath": true}`): a request to one of them without Service-Repository-Name is
 * authorised against it instead of `*` (admission.ts). Loaded from the artifacts service at
 * start and every 30 s in case an announcement was lost; each change the artifacts service
 * announces (control subject `repositories`) is applied at once, as it is heard, so a switch
 * holds on every gateway without a restart. A load that began before a change was heard never
 * undoes it.
 */
export function repositoryScopesFactory(opts: { artifactsUrl: string; internalSecret: string; tenant: string; log: Pick<Logger, "warn">; refreshMs?: number }) {
  const artifacts = internalClient({
    baseUrl: opts.artifactsUrl,
    service: "artifacts service",
    internalSecret: opts.internalSecret,
    tenant: opts.tenant,
    caller: "gateway",
    connections: 1,
    timeoutMs: 3000,
  });
  let scoped = new Set<string>();
  /** Bumped by each change heard: a load begun before it applies nothing. */
  let heard = 0;
  let warned = false;
  let hits = 0;
  let loads = 0;
  const refreshMs = opts.refreshMs ?? 30_000;

  const refresh = async (): Promise<void> => {
    loads++;
    const before = heard;
    try {
      const { body } = await artifacts.get<ScopeFromPathDoc>(ARTIFACTS_INTERNAL.scopeFromPath, { expect: [200] });
      if (before === heard && Array.isArray(body?.repositories)) scoped = new Set(body.repositories.filter((r) => typeof r === "string"));
      warned = false;
    } catch (err) {
      if (!warned) opts.log.warn({ err: { message: (err as Error).message } }, "could not load the repositories authorised by their path; using the last known ones");
      warned = true;
    }
  };
  const timer = setInterval(() => void refresh(), refreshMs);
  timer.unref();

  return {
    /** Whether a request to `repository` without Service-Repository-Name is authorised against it. */
    fromPath(repository: string): boolean {
      hits++;
      return scoped.has(repository);
    },
    /** A change announced by an artifacts node (any message that is not one is set aside). */
    heard(message: unknown): void {
      const m = message as Partial<RepositoryScopeChange> | null;
      if (typeof m?.repository !== "string" || typeof m.scopeFromPath !== "boolean") return;
      heard++;
      scoped = new Set(scoped);
      if (m.scopeFromPath) scoped.add(m.repository);
      else scoped.delete(m.repository);
    },
    refresh,
    /** Forgets nothing it needs: reads the list again at once. */
    clear: (): Promise<void> => refresh(),
    stats: () => ({ hits, misses: loads, size: scoped.size, ttlMs: refreshMs }),
    close: async () => {
      clearInterval(timer);
      await artifacts.close();
    },
  };
}
export type RepositoryScopes = ReturnType<typeof repositoryScopesFactory>;
