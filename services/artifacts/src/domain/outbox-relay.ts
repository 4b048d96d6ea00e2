import type { Logger } from "pino";
import type { ArtifactEvent } from "@svc/contracts";
import type { OutboxStore } from "../store/outbox-store.js";

export interface OutboxRelayDeps {
  outbox: Pick<OutboxStore, "markSent" | "drain" | "prune">;
  /** Publishes to JetStream with the event id as message id; false when it was not stored. */
  publish: (event: ArtifactEvent) => Promise<boolean>;
  log: Pick<Logger, "warn" | "info">;
  /** Sent marks are written in batches: one UPDATE per interval, not one per event. */
  markEveryMs?: number;
  sweepEveryMs?: number;
  /** An unsent event younger than this may still be on its way from the request that made it. */
  minAgeMs?: number;
}

const BATCH = 100;

/**
 * Delivers outbox events: at once after the change committed (awaited by the request), and
 * again from a background sweep for anything left unsent (NATS down, a crash before the mark).
 * A delivered event's row is deleted (in batches): the outbox holds only what is yet to be sent.
 * Delivery is at least once; JetStream drops a repeat of an event id within its duplicate
 * window, and consumers handle an event once by its id.
 */
export function outboxRelayFactory(deps: OutboxRelayDeps) {
  const markEveryMs = deps.markEveryMs ?? 200;
  const sweepEveryMs = deps.sweepEveryMs ?? 2000;
  const minAgeMs = deps.minAgeMs ?? 5000;
  let marks: string[] = [];
  let markTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> | undefined;
  let pruned = false;

  const flushMarks = async () => {
    if (markTimer) clearTimeout(markTimer);
    markTimer = undefined;
    const ids = marks;
    marks = [];
    if (ids.length === 0) return;
    try {
      await deps.outbox.markSent(ids);
    } catch (err) {
      // Left unsent: the sweep publishes them again under the same ids.
      deps.log.warn({ err, events: ids.length }, "could not mark events sent");
    }
  };

  const sweep = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await deps.outbox.drain(minAgeMs, BATCH, async (rows) => {
        const sent: string[] = [];
        for (const r of rows) {
          // In order: stop at the first failure so a later event never overtakes an earlier one here.
          if (!(await deps.publish(r.event))) break;
          sent.push(r.id);
        }
        return sent;
      });
      total += n;
      if (n < BATCH) break;
    }
    if (total > 0) deps.log.info({ events: total }, "relayed events left in the outbox");
    // Once, on the first sweep: rows an earlier version kept after sending.
    if (!pruned) {
      pruned = true;
      await deps.outbox.prune();
    }
    return total;
  };

  return {
    /** Publishes an event whose change has committed; true when JetStream stored it. */
    async deliver(event: ArtifactEvent): Promise<boolean> {
      const ok = await deps.publish(event);
      if (ok) {
        marks.push(event.id);
        if (marks.length >= 500) void flushMarks();
        else markTimer ??= setTimeout(() => void flushMarks(), markEveryMs);
      }
      return ok;
    },
    sweep,
    flushMarks,
    start() {
      sweepTimer = setInterval(() => {
        if (sweeping) return;
        sweeping = sweep()
          .catch((err) => deps.log.warn({ err }, "outbox sweep failed; retrying"))
          .finally(() => (sweeping = undefined));
      }, sweepEveryMs);
      sweepTimer.unref();
    },
    async stop() {
      if (sweepTimer) clearInterval(sweepTimer);
      await sweeping;
      await flushMarks();
    },
  };
}
export type OutboxRelay = ReturnType<typeof outboxRelayFactory>;
