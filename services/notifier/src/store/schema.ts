import type { ColumnType, Generated } from "kysely";
import type { DeliveryState } from "@svc/contracts";

export const SCHEMA = "notifier";

// The API's states are the stored ones.
export { DELIVERY_STATES, type DeliveryState } from "@svc/contracts";

/** One event as it will be sent: the exact body, so every attempt signs the same bytes. */
export interface EventTable {
  id: string;
  kind: string;
  time: Date;
  payload: string;
  received_at: ColumnType<Date, Date | undefined, never>;
}

/** One event to one endpoint. (event_id, endpoint) is unique: a redelivered event is recorded once. */
export interface DeliveryTable {
  id: Generated<string>;
  event_id: string;
  endpoint: string;
  state: ColumnType<DeliveryState, DeliveryState | undefined, DeliveryState>;
  /** Every attempt ever made, across redeliveries. */
  attempts: ColumnType<number, number | undefined, number>;
  /** Attempts since the delivery was (re)queued: what the retry budget counts. */
  round_attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | undefined, Date>;
  /** A worker's claim: another worker may take the delivery once it has passed. */
  lease_until: Date | null;
  lease_token: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  delivered_at: Date | null;
}

export interface NotifierDatabase {
  events: EventTable;
  deliveries: DeliveryTable;
}
