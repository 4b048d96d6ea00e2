import type { Logger } from "pino";
import { Pool } from "undici";
import { encodePrincipal } from "@svc/contracts";
import { identityHeaders } from "@svc/kit";

/**
 * The rate ceilings this gateway applies: `svc.rate-limit` for every tenant, and the per-tenant
 * overrides kept by the admin service. Loaded at start, again when the admin service announces a
 * change, and every 30 s in case an announcement was lost.
 */
export function limitSourceFactory(opts: { adminUrl: string; internalSecret: string; tenant: string; defaultPerMinute: number; log: Logger; refreshMs?: number }) {
  const pool = new Pool(opts.adminUrl, { connections: 2 });
  const principal = encodePrincipal({ kind: "system", tenant: opts.tenant, id: "gateway" });
  let overrides = new Map<string, number>();
  let warned = false;

  const refresh = async (): Promise<void> => {
    const path = "/internal/rate-limits";
    try {
      const res = await pool.request({ method: "GET", path, headers: identityHeaders(opts.internalSecret, "GET", path, principal), headersTimeout: 3000, bodyTimeout: 3000 });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`admin service answered ${res.statusCode}`);
      }
      const body = (await res.body.json()) as { tenants: Record<string, number> };
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
      await pool.close();
    },
  };
}
