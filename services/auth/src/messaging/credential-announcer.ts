import type { Logger } from "pino";
import type { Transaction } from "kysely";
import { subjectFor, type CredentialChanged } from "@svc/contracts";
import { newEventId, outboxRelay, type Bus } from "@svc/kit";
import type { OutboxStore } from "../store/outbox-store.js";
import type { AuthDatabase } from "../store/schema.js";

/** A change as the domain states it; the announcer adds the event id, time and tenant. */
export type CredentialChange = Omit<CredentialChanged, "id" | "time" | "tenant">;

/** What the domain needs: record a change inside its transaction, deliver it once committed. */
export interface Announcer {
  /** Writes the announcement to the outbox in `tx` (the change's own transaction). */
  record(tx: Transaction<AuthDatabase> | undefined, change: CredentialChange): Promise<CredentialChanged>;
  /** Publishes committed announcements; one NATS did not take stays in the outbox for the relay. */
  deliver(...events: CredentialChanged[]): Promise<void>;
}

export interface CredentialAnnouncerDeps {
  bus: Pick<Bus, "publish" | "ready">;
  outbox: Pick<OutboxStore, "add" | "remove" | "drain">;
  tenant: string;
  log: Pick<Logger, "warn" | "info">;
  now?: () => Date;
  sweepEveryMs?: number;
  /** A waiting event younger than this may still be on its way from the call that made it. */
  minAgeMs?: number;
  /** Delivered rows are deleted in batches: one DELETE per interval, not one per change. */
  removeEveryMs?: number;
}

/**
 * Announces every credential, person and group change on `credential.changed`, so gateways drop
 * what they cached. The announcement is written to the outbox with the change and published
 * before the call answers, so other gateways hear of it at once; when NATS does not take it
 * (down, reconnecting), kit's outbox relay publishes it from the outbox once NATS is back, in
 * order, under the same event id (JetStream drops a repeat). It is never dropped.
 */
export function credentialAnnouncerFactory(deps: CredentialAnnouncerDeps) {
  const now = deps.now ?? (() => new Date());
  const relay = outboxRelay<CredentialChanged>({
    outbox: deps.outbox,
    publish: (event) => deps.bus.publish("credential.changed", event),
    log: deps.log,
    what: "credential changes",
    sweepEveryMs: deps.sweepEveryMs,
    minAgeMs: deps.minAgeMs,
    removeEveryMs: deps.removeEveryMs,
  });

  const announcer: Announcer = {
    async record(tx, change) {
      const event: CredentialChanged = { id: newEventId(), time: now().toISOString(), tenant: deps.tenant, ...change };
      await deps.outbox.add(event, tx);
      return event;
    },
    async deliver(...events) {
      await relay.deliver(...events);
    },
  };

  return {
    ...announcer,
    subject: subjectFor(deps.tenant, "credential.changed"),
    /** Resolves true once NATS is connected, false after `timeoutMs` without it. */
    ready: (timeoutMs: number) => deps.bus.ready(timeoutMs),
    sweep: relay.sweep,
    start: relay.start,
    stop: relay.stop,
  };
}

export type CredentialAnnouncer = ReturnType<typeof credentialAnnouncerFactory>;
