import { maskUrl } from "@svc/contracts";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/**
 * The notifier's meters, in the process registry. Endpoint labels are the masked URL, scheme
 * and host only (bounded by the settings; a path or query may carry a receiver's token).
 */
export function webhookMetricsFactory(registry: Registry, open?: () => Promise<{ pending: number; setAside: number }>) {
  const registers = [registry];
  const openGauge = new Gauge({
    name: "svc_webhook_deliveries_open",
    help: "Deliveries waiting to be sent (pending) or given up on (set-aside), across the deployment",
    labelNames: ["state"] as const,
    registers,
    async collect() {
      if (!open) return;
      try {
        const c = await open();
        this.set({ state: "pending" }, c.pending);
        this.set({ state: "set-aside" }, c.setAside);
      } catch {
        // Postgres is away: leave the last values; the health check says why.
      }
    },
  });
  return {
    /** Records forgotten after svc.webhook-history. */
    pruned: new Counter({
      name: "svc_webhook_records_pruned_total",
      help: "Finished deliveries and their events forgotten after svc.webhook-history",
      labelNames: ["what"] as const,
      registers,
    }),
    /** Final outcome of a delivery: delivered or set aside. */
    deliveries: new Counter({
      name: "svc_webhook_deliveries_total",
      help: "Deliveries finished, by endpoint and outcome (delivered, set-aside)",
      labelNames: ["endpoint", "outcome"] as const,
      registers,
    }),
    /** Each attempt: delivered, failed (will be retried or set aside), refused by the address check. */
    attempts: new Counter({
      name: "svc_webhook_attempts_total",
      help: "Delivery attempts, by endpoint and outcome (delivered, failed, refused)",
      labelNames: ["endpoint", "outcome"] as const,
      registers,
    }),
    attemptSeconds: new Histogram({
      name: "svc_webhook_attempt_duration_seconds",
      help: "Time one delivery attempt took, by endpoint",
      labelNames: ["endpoint"] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    /** From the event's time to the notifier reading it off the stream. */
    eventLag: new Histogram({
      name: "svc_webhook_event_lag_seconds",
      help: "Time from an event to the notifier reading it from the stream",
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 3600],
      registers,
    }),
    /** From the event's time to a receiver's 2xx. */
    deliveryLag: new Histogram({
      name: "svc_webhook_delivery_lag_seconds",
      help: "Time from an event to its delivery, by endpoint",
      labelNames: ["endpoint"] as const,
      buckets: [0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 1800, 3600, 21600],
      registers,
    }),
    events: new Counter({
      name: "svc_webhook_events_total",
      help: "Artifact events read from the stream, by result (recorded, duplicate, unmatched, off, unreadable)",
      labelNames: ["result"] as const,
      registers,
    }),
    /** Events in the stream this deployment's notifiers have not read yet. */
    waiting: new Gauge({ name: "svc_webhook_events_waiting", help: "Events in the stream not yet read by the notifiers (consumer backlog)", registers }),
    open: openGauge,
  };
}

export type WebhookMetrics = ReturnType<typeof webhookMetricsFactory>;

/** An endpoint as logs and meters name it: masked (the path and query may hold its token). */
export function endpointLabel(url: string): string {
  return maskUrl(url);
}
