/**
 * The webhooks API's answers (`GET /api/webhooks/deliveries`, `GET /api/webhooks/endpoints`, a
 * delivery sent again): the notifier builds them; the console and the tests read them. Times are
 * ISO 8601 strings.
 */
export const DELIVERY_STATES = ["pending", "delivered", "set-aside"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export interface DeliveryView {
  id: string;
  /** The artifact event's id. */
  event: string;
  type: string;
  endpoint: string;
  state: DeliveryState;
  attempts: number;
  /** When the next attempt is due (pending deliveries only). */
  nextAttempt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  created: string;
  updated: string;
  delivered: string | null;
}

export interface EndpointView {
  url: string;
  events: string[];
  allEvents: boolean;
  signed: boolean;
}
