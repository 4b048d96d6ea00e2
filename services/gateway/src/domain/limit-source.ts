import type { Logger } from "pino";
import { ADMIN_INTERNAL, type RateLimitsDoc } from "@svc/contracts";
import { internalClient } from "@svc/kit";

/**
 * The rate ceilings this gateway applies: `svc.rate-limit` for every tenant (the admin service's
 * live value, changed at run time with `PUT /api/settings/rate-limit`, unless this gateway's
 * operator fixed it at start: `defaultFixed`), and the per-tenant overrides kept by the admin service. Loaded at start, again when the admin service announces a
 * change, and every 30 s in case an announcement was lost.
 */
export function limitSourceFactory(opts: { adminUrl: string; internalSecret: string; tenant: string; defaultPerMinute: number; defaultFixed?: boolean; log: Logger; refreshMs?: number }) {
  const admin = internalClient({
    baseUrl: opts.adminUrl,
    service: "admin service",
    internalSecret: opts.internalSecret,
    tenant: opts.tenant,
    caller: "gateway",
    connections: 2,
    timeoutMs: 3000,
  });
  let overrides = new Map<string, number>();
  let defaultPerMinute = opts.defaultPerMinute;
  let warned = false;
  const refreshMs = opts.refreshMs ?? 30_000;
  // For GET /api/caches: ceilings answered from memory, and loads from the admin service.
  let hits = 0;
  let loads = 0;

  const refresh = async (): Promise<void> => {
    loads++;
    try {
      const { body } = await admin.get<RateLimitsDoc>(ADMIN_INTERNAL.rateLimits, { expect: [200] });
      overrides = new Map(Object.entries(body.tenants));
      if (!opts.defaultFixed && Number.isInteger(body.default) && body.default >= 0) defaultPerMinute = body.default;
      warned = false;
    } catch (err) {
      if (!warned) opts.log.warn({ err: { message: (err as Error).message } }, "could not load rate-limit overrides; using the last known ones");
      warned = true;
    }
  };
  const timer = setInterval(() => void refresh(), refreshMs);
  timer.unref();

  return {
    refresh,
    limitFor: (tenant: string): number => {
      hits++;
      return overrides.get(tenant) ?? defaultPerMinute;
    },
    /** Forgets the overrides and reads them again at once. */
    clear: (): Promise<void> => {
      overrides = new Map();
      return refresh();
    },
    stats: () => ({ hits, misses: loads, size: overrides.size, ttlMs: refreshMs }),
    close: async () => {
      clearInterval(timer);
      await admin.close();
    },
  };
}
