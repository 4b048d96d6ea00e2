import type { Logger } from "pino";
import type { Transaction } from "kysely";
import { subjectFor, type CredentialChanged } from "@svc/contracts";
import { newEventId, type Bus } from "@svc/kit";
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

const BATCH = 100;

/**
 * Announces every credential, person and group change on `credential.changed`, so gateways drop
 * what they cached. The announcement is written to the outbox with the change and published
 * before the call answers, so other gateways hear of it at once; when NATS does not take it
 * (down, reconnecting), the relay publishes it from the outbox once NATS is back, in order,
 * under the same event id (JetStream drops a repeat). It is never dropped.
 */
export function credentialAnnouncerFactory(deps: CredentialAnnouncerDeps) {
  const now = deps.now ?? (() => new Date());
  const sweepEveryMs = deps.sweepEveryMs ?? 2000;
  const minAgeMs = deps.minAgeMs ?? 5000;
  const removeEveryMs = deps.removeEveryMs ?? 200;
  let delivered: string[] = [];
  let removeTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> | undefined;

  const flushRemovals = async () => {
    if (removeTimer) clearTimeout(removeTimer);
    removeTimer = undefined;
    const ids = delivered;
    delivered = [];
    // Left in the outbox on failure: the relay publishes them again under the same ids.
    await deps.outbox.remove(ids).catch((err: unknown) => deps.log.warn({ err, events: ids.length }, "could not clear announced changes from the outbox"));
  };

  const publish = (event: CredentialChanged) => deps.bus.publish("credential.changed", event);

  const sweep = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await deps.outbox.drain(minAgeMs, BATCH, async (events) => {
        const sent: string[] = [];
        // In order, stopping at the first refusal: a later change never overtakes an earlier one.
        for (const e of events) {
          if (!(await publish(e))) break;
          sent.push(e.id);
        }
        return sent;
      });
      total += n;
      if (n < BATCH) break;
    }
    if (total > 0) deps.log.info({ events: total }, "announced credential changes left in the outbox");
    return total;
  };

  const announcer: Announcer = {
    async record(tx, change) {
      const event: CredentialChanged = { id: newEventId(), time: now().toISOString(), tenant: deps.tenant, ...change };
      await deps.outbox.add(event, tx);
      return event;
    },
    async deliver(...events) {
      for (const e of events) {
        if (!(await publish(e))) break;
        delivered.push(e.id);
      }
      if (delivered.length >= 500) await flushRemovals();
      else if (delivered.length > 0) removeTimer ??= setTimeout(() => void flushRemovals(), removeEveryMs);
    },
  };

  return {
    ...announcer,
    subject: subjectFor(deps.tenant, "credential.changed"),
    /** Resolves true once NATS is connected, false after `timeoutMs` without it. */
    ready: (timeoutMs: number) => deps.bus.ready(timeoutMs),
    sweep,
    start() {
      sweepTimer = setInterval(() => {
        sweeping ??= sweep()
          .catch((err: unknown) => deps.log.warn({ err }, "credential outbox sweep failed; retrying"))
          .finally(() => (sweeping = undefined));
      }, sweepEveryMs);
      sweepTimer.unref();
    },
    async stop() {
      if (sweepTimer) clearInterval(sweepTimer);
      await sweeping;
      await flushRemovals();
    },
  };
}

export type CredentialAnnouncer = ReturnType<typeof credentialAnnouncerFactory>;
