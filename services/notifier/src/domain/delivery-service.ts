import { conflict, maskUrl, notFound, type DeliveryView, type EndpointView } from "@svc/contracts";
import type { DeliveryRow, DeliveryStore } from "../store/delivery-store.js";
import type { DeliveryState } from "../store/schema.js";
import type { Endpoint } from "@svc/kit";

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export function toView(r: DeliveryRow): DeliveryView {
  return {
    id: String(r.id),
    event: r.event_id,
    type: r.kind,
    // The URL carries the receiver's token (Slack, Teams, Discord): only its scheme and host are shown.
    endpoint: maskUrl(r.endpoint),
    state: r.state,
    attempts: r.attempts,
    nextAttempt: r.state === "pending" ? iso(r.next_attempt_at) : null,
    lastStatus: r.last_status,
    lastError: r.last_error,
    created: iso(r.created_at)!,
    updated: iso(r.updated_at)!,
    delivered: iso(r.delivered_at),
  };
}

/** The administration API's view of deliveries and endpoints; `endpoints` and `enabled` are read at each call (they change at run time). */
export function deliveryServiceFactory(deps: {
  store: Pick<DeliveryStore, "list" | "get" | "requeue">;
  endpoints: readonly Endpoint[];
  enabled: boolean;
  wake: (url: string) => void;
}) {
  return {
    async list(q: { state?: DeliveryState; endpoint?: string; event?: string; after?: string; limit: number }): Promise<{ items: DeliveryView[]; next?: string }> {
      // One more than asked tells whether more remain.
      const rows = await deps.store.list({ ...q, limit: q.limit + 1 });
      const items = rows.slice(0, q.limit).map(toView);
      return { items, next: rows.length > q.limit ? items[items.length - 1]?.id : undefined };
    },

    async get(id: string): Promise<DeliveryView> {
      const r = await deps.store.get(id);
      if (!r) throw notFound(`no delivery ${id}`);
      return toView(r);
    },

    /** Sends a set-aside delivery again, with a fresh round of retries. */
    async redeliver(id: string): Promise<DeliveryView> {
      const r = await deps.store.get(id);
      if (!r) throw notFound(`no delivery ${id}`);
      if (r.state !== "set-aside") throw conflict(`only a set-aside delivery can be redelivered; delivery ${id} is ${r.state}`);
      if (!deps.enabled) throw conflict("webhook delivery is off (svc.webhook=false)");
      if (!deps.endpoints.some((e) => e.url === r.endpoint)) throw conflict(`the endpoint of delivery ${id} is no longer in svc.webhook-endpoints`);
      if (!(await deps.store.requeue(id))) throw conflict(`delivery ${id} changed meanwhile; look again`);
      deps.wake(r.endpoint);
      return this.get(id);
    },

    /** In the setting's order; the cursor is a position in it, since the URLs themselves are not shown. */
    endpoints(q: { after?: string; limit: number }): { items: EndpointView[]; next?: string } {
      const from = q.after !== undefined && /^[0-9]{1,9}$/.test(q.after) ? Number(q.after) : 0;
      const page = deps.endpoints.slice(from, from + q.limit);
      const items = page.map((e) => ({ url: maskUrl(e.url), events: [...e.kinds], allEvents: e.allEvents, signed: e.key !== undefined }));
      const end = from + page.length;
      return { items, next: page.length > 0 && end < deps.endpoints.length ? String(end) : undefined };
    },
  };
}

export type DeliveryService = ReturnType<typeof deliveryServiceFactory>;
