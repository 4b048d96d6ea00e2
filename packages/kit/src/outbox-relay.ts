import type { Logger } from "pino";

/** The outbox table as the relay needs it; an event's row id is the event's id. */
export interface OutboxSource<E extends { id: string }> {
  /**
   * Runs `deliver` over the oldest waiting events older than `minAgeMs` (locked, so another
   * process's relay skips them meanwhile); `deliver` answers the ids it delivered, which leave
   * the outbox. Answers how many did.
   */
  drain(minAgeMs: number, limit: number, deliver: (events: E[]) => Promise<string[]>): Promise<number>;
  /** Forgets events NATS has stored. */
  remove(ids: string[]): Promise<unknown>;
}

export interface OutboxRelayOptions<E extends { id: string }> {
  outbox: OutboxSource<E>;
  /** Publishes to JetStream with the event id as message id; false when it was not stored. */
  publish: (event: E) => Promise<boolean>;
  log: Pick<Logger, "warn" | "info">;
  /** What the events are, for log lines ("artifact events"). */
  what: string;
  sweepEveryMs?: number;
  /** A waiting event younger than this may still be on its way from the call that made it. */
  minAgeMs?: number;
  /** Delivered rows are removed in batches: one statement per interval, not one per event. */
  removeEveryMs?: number;
  /** Runs once, before the first sweep's drain (e.g. dropping rows an older version kept). */
  beforeFirstSweep?: () => Promise<unknown>;
}

const BATCH = 100;

/**
 * The transactional outbox's delivery, shared by every service that keeps one: an event is
 * written with its change, published at once after the commit, and published again by a
 * background sweep while it stays waiting (NATS down, a crash before its row was removed), in
 * order, under the same id (JetStream drops a repeat within its duplicate window). A delivered
 * event's row is removed: the stream is the record, the outbox holds only what is yet to be sent.
 */
export function outboxRelay<E extends { id: string }>(o: OutboxRelayOptions<E>) {
  const sweepEveryMs = o.sweepEveryMs ?? 2000;
  const minAgeMs = o.minAgeMs ?? 5000;
  const removeEveryMs = o.removeEveryMs ?? 200;
  let delivered: string[] = [];
  let removeTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> | undefined;
  let first = true;

  const flushRemovals = async (): Promise<void> => {
    if (removeTimer) clearTimeout(removeTimer);
    removeTimer = undefined;
    const ids = delivered;
    delivered = [];
    if (ids.length === 0) return;
    // Left waiting on failure: the sweep publishes them again under the same ids.
    await o.outbox.remove(ids).then(
      () => undefined,
      (err: unknown) => o.log.warn({ err, events: ids.length }, `could not clear delivered ${o.what} from the outbox`),
    );
  };

  const sweep = async (): Promise<number> => {
    if (first) {
      first = false;
      await o.beforeFirstSweep?.();
    }
    let total = 0;
    for (;;) {
      const n = await o.outbox.drain(minAgeMs, BATCH, async (events) => {
        const sent: string[] = [];
        // In order, stopping at the first refusal: a later event never overtakes an earlier one here.
        for (const e of events) {
          if (!(await o.publish(e))) break;
          sent.push(e.id);
        }
        return sent;
      });
      total += n;
      if (n < BATCH) break;
    }
    if (total > 0) o.log.info({ events: total }, `relayed ${o.what} left in the outbox`);
    return total;
  };

  return {
    /**
     * Publishes committed events in order, stopping at the first NATS does not take (it and those
     * after it stay for the sweep). True when every one was published.
     */
    async deliver(...events: E[]): Promise<boolean> {
      let all = true;
      for (const e of events) {
        if (!(await o.publish(e))) {
          all = false;
          break;
        }
        delivered.push(e.id);
      }
      if (delivered.length >= 500) void flushRemovals();
      else if (delivered.length > 0) removeTimer ??= setTimeout(() => void flushRemovals(), removeEveryMs);
      return all;
    },
    sweep,
    flushRemovals,
    start(): void {
      sweepTimer = setInterval(() => {
        sweeping ??= sweep()
          .catch((err: unknown) => o.log.warn({ err }, `${o.what} outbox sweep failed; retrying`))
          .finally(() => (sweeping = undefined));
      }, sweepEveryMs);
      sweepTimer.unref();
    },
    async stop(): Promise<void> {
      if (sweepTimer) clearInterval(sweepTimer);
      await sweeping;
      await flushRemovals();
    },
  };
}

export type OutboxRelay<E extends { id: string }> = ReturnType<typeof outboxRelay<E>>;
