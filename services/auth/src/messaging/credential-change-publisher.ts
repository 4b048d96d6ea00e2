import { subjectFor, type CredentialChanged } from "@svc/contracts";
import { newEventId, type Bus } from "@svc/kit";

/** A change as the domain states it; the publisher adds the event id, time and tenant. */
export type CredentialChange = Omit<CredentialChanged, "id" | "time" | "tenant">;

/**
 * Announces every credential, person and group change on `credential.changed`, so gateways drop
 * what they cached. The domain awaits it before a change is answered, so other gateways hear of
 * it at once; when NATS is down it resolves false at once (logged by the bus), and svc.cache.ttl
 * bounds how long other gateways may lag.
 */
export function credentialChangePublisherFactory(deps: { bus: Pick<Bus, "publish" | "ready">; tenant: string; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  return {
    subject: subjectFor(deps.tenant, "credential.changed"),
    publish: (change: CredentialChange): Promise<boolean> =>
      deps.bus.publish("credential.changed", { id: newEventId(), time: now().toISOString(), tenant: deps.tenant, ...change }),
    /** Resolves true once NATS is connected, false after `timeoutMs` without it. */
    ready: (timeoutMs: number) => deps.bus.ready(timeoutMs),
  };
}

export type CredentialChangePublisher = ReturnType<typeof credentialChangePublisherFactory>;
