import type { ArtifactEvent, ArtifactEventKind } from "@svc/contracts";
import type { DeliveryStore } from "../store/delivery-store.js";
import type { Endpoint } from "@svc/kit";
import type { WebhookMetrics } from "./webhook-metrics.js";

/**
 * What a receiver gets: the Standard Webhooks payload shape, `type` the event kind,
 * `timestamp` the event's time, `data` the event exactly as it is in the event catalog.
 */
export interface WebhookPayload {
  type: ArtifactEventKind;
  timestamp: string;
  data: ArtifactEvent;
}

export function payloadOf(event: ArtifactEvent): string {
  const p: WebhookPayload = { type: event.kind, timestamp: event.time, data: event };
  return JSON.stringify(p);
}

/**
 * Turns one event from the stream into pending deliveries, one per endpoint that wants its
 * kind. It resolves only once they are in Postgres, so the caller may then acknowledge the
 * event; a redelivered event records nothing new.
 */
export function eventIntakeFactory(deps: {
  store: Pick<DeliveryStore, "recordEvent">;
  endpoints: readonly Endpoint[];
  enabled: boolean;
  metrics: WebhookMetrics;
  wake: (url: string) => void;
}) {
  return async function take(event: ArtifactEvent): Promise<"off" | "unmatched" | "recorded" | "duplicate"> {
    const lag = (Date.now() - Date.parse(event.time)) / 1000;
    if (Number.isFinite(lag) && lag >= 0) deps.metrics.eventLag.observe(lag);
    const result = await record(event);
    deps.metrics.events.inc({ result });
    return result;
  };

  async function record(event: ArtifactEvent): Promise<"off" | "unmatched" | "recorded" | "duplicate"> {
    if (!deps.enabled) return "off";
    const targets = deps.endpoints.filter((e) => e.kinds.includes(event.kind)).map((e) => e.url);
    if (targets.length === 0) return "unmatched";
    const time = new Date(event.time);
    const added = await deps.store.recordEvent(
      { id: event.id, kind: event.kind, time: Number.isNaN(time.getTime()) ? new Date() : time, payload: payloadOf(event) },
      targets,
    );
    for (const url of targets) deps.wake(url);
    return added > 0 ? "recorded" : "duplicate";
  }
}

export type EventIntake = ReturnType<typeof eventIntakeFactory>;
