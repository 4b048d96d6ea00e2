import type { Logger } from "pino";
import type { Settings } from "@svc/kit";
import type { AuditStore } from "../store/audit-store.js";

/**
 * Purges audit entries older than svc.audit-retention (read live at each run, so a change made at
 * run time applies at the next one): soon after start, then every `everyMs` (an hour). Every admin
 * node runs it; a purge is idempotent, so several at once only repeat each other's work.
 */
export function auditPurgerFactory(deps: { store: Pick<AuditStore, "purge">; settings: () => Pick<Settings, "auditRetentionMs">; log: Pick<Logger, "info" | "warn">; everyMs?: number; firstAfterMs?: number }) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  const runOnce = async (now = Date.now()): Promise<number> => {
    const retention = deps.settings().auditRetentionMs;
    if (!(retention > 0)) return 0;
    const removed = await deps.store.purge(new Date(now - retention));
    if (removed > 0) deps.log.info({ removed, retentionMs: retention }, "purged audit entries older than svc.audit-retention");
    return removed;
  };
  const tick = () => {
    running ??= runOnce()
      .catch((err: unknown) => deps.log.warn({ err }, "could not purge old audit entries; trying again at the next run"))
      .finally(() => (running = undefined));
  };
  return {
    runOnce,
    start(): void {
      timer = setTimeout(function again() {
        tick();
        timer = setTimeout(again, deps.everyMs ?? 3_600_000);
        timer.unref();
      }, deps.firstAfterMs ?? 10_000);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
