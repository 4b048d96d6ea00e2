import { controlSubjects, type Bus } from "@svc/kit";
import type { GatewayMetrics } from "../domain/gateway-metrics.js";
import type { RightsCache } from "../domain/rights-cache.js";

/**
 * What the gateway hears: every credential, person and group change (`credential.changed`, from
 * the auth service of any node) drops what this node cached, and a rate-limit override changed
 * on any node (the admin service's control subject) is read again at once.
 */
export function gatewayListenersFactory(deps: {
  bus: Pick<Bus, "subscribe" | "listen">;
  internalSecret: string;
  cache: Pick<RightsCache, "evict" | "clear">;
  metrics: Pick<GatewayMetrics, "eventLag">;
  refreshLimits: () => void;
}): void {
  deps.bus.subscribe("credential.changed", (event) => {
    deps.metrics.eventLag.observe(Math.max(0, (Date.now() - Date.parse(event.time)) / 1000));
    if (event.subject.kind === "key") deps.cache.evict(event.subject.id);
    else deps.cache.clear(); // a person's or group's change can touch many keys' holders: start afresh
  });
  deps.bus.listen(controlSubjects(deps.internalSecret).limits, () => deps.refreshLimits());
}
