import { listenedControlSubjects, type Bus } from "@svc/kit";
import type { GatewayMetrics } from "../domain/gateway-metrics.js";
import type { RightsCache } from "../domain/rights-cache.js";

/**
 * What the gateway hears: every credential, person and group change (`credential.changed`, from
 * the auth service of any node) drops what this node cached of it, and a rate-limit override changed
 * on any node (the admin service's control subject) is read again at once.
 */
export function gatewayListenersFactory(deps: {
  bus: Pick<Bus, "subscribe" | "listen">;
  internalSecret: string;
  /** svc.internal-secret-previous: during a rotation, an admin node on the other secret is heard too. */
  internalSecretPrevious?: string;
  cache: Pick<RightsCache, "evict" | "evictDependents">;
  metrics: Pick<GatewayMetrics, "eventLag">;
  refreshLimits: () => void;
}): void {
  deps.bus.subscribe("credential.changed", (event) => {
    deps.metrics.eventLag.observe(Math.max(0, (Date.now() - Date.parse(event.time)) / 1000));
    const { kind, id } = event.subject;
    if (kind === "key") return deps.cache.evict(id);
    // Only what the change touches: keys whose rights come from that person or group. A
    // membership change also moves the one person named, whose set of groups changed.
    deps.cache.evictDependents({ kind, id });
    if (kind === "group" && event.change === "members") for (const person of event.affected ?? []) deps.cache.evictDependents({ kind: "person", id: person });
  });
  for (const listened of listenedControlSubjects({ internalSecret: deps.internalSecret, internalSecretPrevious: deps.internalSecretPrevious ?? "" })) {
    deps.bus.listen(listened.limits, () => deps.refreshLimits());
  }
}
