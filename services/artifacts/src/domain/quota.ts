import { Gauge, type Registry } from "prom-client";
import { bytesText, invalid, ServiceError } from "@svc/contracts";
import type { Logger } from "pino";
import type { MetadataStore, RepositoryUsage } from "../store/metadata-store.js";
import type { ArtifactService } from "./artifact-service.js";
import { OVER_QUOTA } from "../store/quota-migrations.js";

/** Bytes as people read them, the exact figure beside (a refusal's sentence). */
export const bytesOf = (n: number): string => (n < 1024 ? bytesText(n) : `${bytesText(n)} (${n} bytes)`);

/** What a write over a quota was refused with: the repository, what it adds, what it used before and its quota. */
export interface OverQuota {
  repository: string;
  adding: number;
  used: number;
  quota: number;
}

/**
 * The refusal of a write over a quota: 413, which every client prints without retrying (npm the
 * JSON `error`, Maven, twine and pip the reason phrase, curl the text body); a 507 is retried by
 * npm as a server failure (docs/administration/repositories.md, "Quotas").
 */
export function overQuota(o: OverQuota): ServiceError {
  return new ServiceError(
    "payload_too_large",
    `repository ${o.repository} is over its storage quota: ${bytesOf(o.adding)} more would make ${bytesOf(o.used + o.adding)} of its ${bytesOf(o.quota)}; nothing was stored (an administrator can raise it: PATCH /api/repositories/${o.repository} {"quotaBytes": N})`,
  );
}

/** The refusal a Postgres error is when the usage trigger (store/quota-migrations.ts) refused a write; undefined for any other. */
export function quotaRefusalOf(err: unknown): ServiceError | undefined {
  const e = err as { code?: string; detail?: string } | undefined;
  if (e?.code !== OVER_QUOTA) return undefined;
  try {
    const d = JSON.parse(e.detail ?? "") as OverQuota;
    return overQuota({ repository: String(d.repository), adding: Number(d.adding), used: Number(d.used), quota: Number(d.quota) });
  } catch {
    return new ServiceError("payload_too_large", "this repository is over its storage quota: nothing was stored");
  }
}

/** `quotaBytes` as the API takes it: a positive whole number of bytes, or null (none). */
export function parseQuotaBytes(value: unknown): number | null {
  if (value === null) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) throw invalid("quotaBytes", "quotaBytes must be a positive whole number of bytes, or null to remove the quota");
  return value;
}

export interface QuotaDeps {
  metadata: Pick<MetadataStore, "usage" | "leastRecentlyUsed" | "find">;
  /** Retention's removal (the artifact service's): a file goes only if it is still what was read, and not held. */
  artifacts?: Pick<ArtifactService, "removeForRetention">;
  log?: Pick<Logger, "info" | "warn">;
  /**
   * Whether a repository may have a quota, as this process last read them (the repository
   * list): false skips the early check's look-up. A quota set on another node within the list's
   * refresh is then checked only at the commit, which never misses it.
   */
  mayHaveQuota?: (repository: string) => boolean;
}

/** Who a proxy's evictions name in their `artifact.removed` events. */
const EVICTOR = { kind: "system" as const, id: "quota" };
/** Candidates read per round of an eviction. */
const EVICT_PAGE = 100;

/**
 * Storage quotas (docs/administration/repositories.md, "Quotas"). What a quota allows is decided
 * in Postgres as each write commits (the path index's usage trigger: store/quota-migrations.ts),
 * whatever code writes; `check` is the early answer a route gives before it accepts a large body
 * (a PUT's Content-Length, an OCI blob upload), so a client is not let send gigabytes that the
 * commit would refuse. It never lets through what the commit refuses.
 */
export function quotaFactory(deps: QuotaDeps) {
  const usage = async (repository: string): Promise<RepositoryUsage | undefined> => (await deps.metadata.usage(repository))[0];
  return {
    usage,
    /**
     * Refuses (throws the 413 every write over the quota gets) when `bytes` more would take
     * `repository` over its quota; `replacing`: the size of the file the write replaces (a
     * redeploy counts the difference). Proxies are never refused (they evict, proxy/file-fetch.ts).
     */
    async check(repository: string, bytes: number, path?: string): Promise<void> {
      if (deps.mayHaveQuota?.(repository) === false) return;
      const u = await usage(repository);
      if (!u || u.quotaBytes === null || u.type === "proxy" || u.usedBytes + bytes <= u.quotaBytes) return;
      // Over as a new file: a redeploy of `path` counts only the difference (one more look-up, only here).
      const replacing = path === undefined ? 0 : ((await deps.metadata.find(repository, path))?.size ?? 0);
      const adding = bytes - replacing;
      if (adding > 0 && u.usedBytes + adding > u.quotaBytes) throw overQuota({ repository, adding, used: u.usedBytes, quota: u.quotaBytes });
    },

    /**
     * A proxy over its quota after a fetch stored `keep`: its cached files that have gone
     * longest without a download go (each with its `artifact.removed` event, reason
     * "retention") until it fits again, never `keep` nor a held file. Answers how many went.
     * A proxy keeps working: a fetch is never refused for its quota.
     */
    async evict(repository: string, keep: string): Promise<number> {
      if (!deps.artifacts) return 0;
      let evicted = 0;
      for (;;) {
        const u = await usage(repository);
        if (!u || u.type !== "proxy" || u.quotaBytes === null || u.usedBytes <= u.quotaBytes) break;
        const page = await deps.metadata.leastRecentlyUsed(repository, keep, EVICT_PAGE);
        let over = u.usedBytes - u.quotaBytes;
        let removed = 0;
        for (const row of page) {
          if (over <= 0) break;
          const out = await deps.artifacts.removeForRetention({ repository, path: row.path, segments: row.path.split("/") }, { sha256: row.sha256, updated: row.updated.getTime() }, EVICTOR);
          if (out.removed) {
            over -= out.size;
            removed++;
          }
        }
        evicted += removed;
        // Nothing left to take (only `keep` or held files), or nothing went this round (others took them): stop.
        if (removed === 0) break;
      }
      if (evicted > 0) deps.log?.info({ repository, evicted }, "proxy over its storage quota: least recently used cached files evicted");
      return evicted;
    },
  };
}
export type Quota = ReturnType<typeof quotaFactory>;

/**
 * The per-repository meters: `svc_repository_used_bytes` and `svc_repository_quota_bytes` (a
 * repository with a quota), read from Postgres at each scrape: every artifacts node reports the
 * same figures (take `max by (repository)`).
 */
export function registerQuotaMeters(registry: Registry, metadata: Pick<MetadataStore, "usage">): void {
  // One read per scrape for both meters (each collects on its own, possibly at once).
  let last: { at: number; read: Promise<RepositoryUsage[]> } | undefined;
  const snapshot = () => {
    if (!last || Date.now() - last.at > 1000) last = { at: Date.now(), read: metadata.usage() };
    return last.read;
  };
  const gauge = (name: string, help: string, value: (u: RepositoryUsage) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ["repository"] as const,
      registers: [registry],
      async collect() {
        // A failed read keeps the last figures (the scrape still answers).
        const all = await snapshot().catch(() => undefined);
        if (!all) return;
        this.reset();
        for (const u of all) {
          const v = value(u);
          if (v !== null) this.set({ repository: u.repository }, v);
        }
      },
    });
  gauge("svc_repository_used_bytes", "The bytes of the files a repository's index holds, as its storage quota counts them (each path counted)", (u) => u.usedBytes);
  gauge("svc_repository_quota_bytes", "A repository's storage quota in bytes (repositories with one)", (u) => u.quotaBytes);
}
