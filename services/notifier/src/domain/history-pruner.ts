import type { Logger } from "pino";
import type { DeliveryStore } from "../store/delivery-store.js";

/**
 * Keeps the delivery records to `svc.webhook-history`: finished deliveries (delivered or set
 * aside) last changed longer ago than that are forgotten, with the events nothing refers to any
 * more. Pending deliveries are never touched. It runs at start and then every quarter of the
 * history (at least every second, at most every hour; `historyMs` is read at each round); with several notifiers each prunes, and
 * what one removed the others find gone.
 */
export function historyPrunerFactory(deps: {
  store: Pick<DeliveryStore, "prune">;
  historyMs: number;
  log: Logger;
  onPruned?: (what: "deliveries" | "events", n: number) => void;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;
  // Read at each round: svc.webhook-history changes at run time. While everything is kept, it looks again every minute.
  const everyMs = () => (deps.historyMs <= 0 ? 60_000 : Math.min(3_600_000, Math.max(1000, Math.floor(deps.historyMs / 4))));
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const pruneOnce = async (): Promise<{ deliveries: number; events: number }> => {
    if (deps.historyMs <= 0) return { deliveries: 0, events: 0 };
    const gone = await deps.store.prune(new Date(now() - deps.historyMs));
    if (gone.deliveries > 0) deps.onPruned?.("deliveries", gone.deliveries);
    if (gone.events > 0) deps.onPruned?.("events", gone.events);
    if (gone.deliveries > 0 || gone.events > 0) deps.log.info({ ...gone, historyMs: deps.historyMs }, "forgot webhook deliveries older than svc.webhook-history");
    return gone;
  };

  const tick = () => {
    running = pruneOnce()
      .then(
        () => {},
        (err: unknown) => deps.log.warn({ err }, "could not prune webhook delivery records; trying again later"),
      )
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, everyMs());
      });
  };

  return {
    /** Starts pruning (while the history is kept for ever, each round prunes nothing). */
    start() {
      if (timer || running) return;
      tick();
    },
    pruneOnce,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
