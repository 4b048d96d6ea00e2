import type { ArtifactEvent } from "@svc/contracts";
import type { Bus } from "@svc/kit";

/**
 * Publishes an artifact event on its kind's subject in the tenant's JetStream stream, with the
 * event id as message id (JetStream drops a repeat within its duplicate window); false when it
 * was not stored, so the outbox keeps it for the relay's next sweep.
 */
export function artifactEventPublisherFactory(bus: Pick<Bus, "publish">) {
  // `kind` and the payload are one union member; TypeScript cannot pair them through the catalog.
  return (event: ArtifactEvent): Promise<boolean> => bus.publish(event.kind, event as never);
}
