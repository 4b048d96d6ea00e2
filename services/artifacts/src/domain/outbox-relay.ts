import type { Logger } from "pino";
import type { ArtifactEvent } from "@svc/contracts";
import { outboxRelay } from "@svc/kit";
import type { OutboxStore } from "../store/outbox-store.js";

export interface OutboxRelayDeps {
  outbox: Pick<OutboxStore, "markSent" | "drain" | "prune">;
  /** Publishes to JetStream with the event id as message id; false when it was not stored. */
  publish: (event: ArtifactEvent) => Promise<boolean>;
  log: Pick<Logger, "warn" | "info">;
  /** Delivered rows are removed in batches: one DELETE per interval, not one per event. */
  markEveryMs?: number;
  sweepEveryMs?: number;
  /** An unsent event younger than this may still be on its way from the request that made it. */
  minAgeMs?: number;
}

/**
 * Delivers the artifacts outbox's events through kit's shared outbox relay: as soon as the
 * change has committed and its answer is on its way (the request does not wait for NATS), and
 * again from a background sweep for anything left unsent. Rows an earlier version kept after sending are dropped at the first sweep.
 */
export function outboxRelayFactory(deps: OutboxRelayDeps) {
  const relay = outboxRelay<ArtifactEvent>({
    outbox: {
      drain: (minAgeMs, limit, deliver) => deps.outbox.drain(minAgeMs, limit, (rows) => deliver(rows.map((r) => r.event))),
      remove: (ids) => deps.outbox.markSent(ids),
    },
    publish: deps.publish,
    log: deps.log,
    what: "artifact events",
    sweepEveryMs: deps.sweepEveryMs,
    minAgeMs: deps.minAgeMs,
    removeEveryMs: deps.markEveryMs,
    beforeFirstSweep: () => deps.outbox.prune(),
  });
  return {
    /** Publishes an event whose change has committed; true when JetStream stored it. */
    deliver: (event: ArtifactEvent): Promise<boolean> => relay.deliver(event),
    sweep: relay.sweep,
    flushMarks: relay.flushRemovals,
    start: relay.start,
    stop: relay.stop,
  };
}
export type OutboxRelay = ReturnType<typeof outboxRelayFactory>;
