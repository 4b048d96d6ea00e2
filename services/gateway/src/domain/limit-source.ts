import type { Logger } from "pino";
import { ADMIN_INTERNAL, type RateLimitsDoc } from "@svc/contracts";
import { internalClient } from "@svc/kit";

/**
 * The rate ceilings this gateway applies: `svc.rate-limit` for every tenant, and the per-tenant
 * overrides kept by the admin service. Loaded at start, again when the admin service announces a
 * change, and every 30 s in case an announcement was lost.
 */
export function limitSourceFactory(opts: { adminUrl: string; internalSecret: string; tenant: string; defaultPerMinute: number; log: Logger; refreshMs?: number }) {
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
  let warned = false;

  const refresh = async (): Promise<void> => {
    try {
      const { body } = await admin.get<RateLimitsDoc>(ADMIN_INTERNAL.rateLimits, { expect: [200] });
      overrides = new Map(Object.entries(body.tenants));
      warned = false;
    } catch (err) {
      if (!warned) opts.log.warn({ err: { message: (err as Error).message } }, "could not load rate-limit overrides; using the last known ones");
      warned = true;
    }
  };
  const timer = setInterval(() => void refresh(), opts.refreshMs ?? 30_000);
  timer.unref();

  return {
    refresh,
    limitFor: (tenant: string): number => overrides.get(tenant) ?? opts.defaultPerMinute,
    close: async () => {
      clearInterval(timer);
      await admin.close();
    },
  };
}
