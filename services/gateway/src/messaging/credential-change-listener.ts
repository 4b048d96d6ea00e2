import { listenedControlSubjects, type Bus } from "@svc/kit";
import type { GatewayMetrics } from "../domain/gateway-metrics.js";
import type { RightsCache } from "../domain/rights-cache.js";
import type { SessionCache } from "../domain/session-cache.js";

/**
 * What the gateway hears: every credential, person and group change (`credential.changed`, from
 * the auth service of any node) drops what this node cached of it, a console session that ended
 * (signed out: the console's `credential.changed`) is forgotten at once, a rate-limit override
 * changed on any node (the admin service's control subject) is read again at once, a
 * repository's scopeFromPath announced by an artifacts node is applied at once, and "Clear
 * caches" on another gateway (the control subject `caches`) drops this node's credentials and
 * sessions too.
 */
export function gatewayListenersFactory(deps: {
  bus: Pick<Bus, "subscribe" | "listen">;
  internalSecret: string;
  /** svc.internal-secret-previous: during a rotation, an admin node on the other secret is heard too. */
  internalSecretPrevious?: string;
  cache: Pick<RightsCache, "evict" | "evictDependents" | "clear">;
  sessions?: Pick<SessionCache, "evict" | "clear">;
  metrics: Pick<GatewayMetrics, "eventLag">;
  refreshLimits: () => void;
  /** A repository's scopeFromPath as an artifacts node announced it (control subject `repositories`). */
  repositoryChanged?: (message: unknown) => void;
  /** This node's name: its own clear announcement is already done here. */
  node?: string;
}): void {
  deps.bus.subscribe("credential.changed", (event) => {
    deps.metrics.eventLag.observe(Math.max(0, (Date.now() - Date.parse(event.time)) / 1000));
    const { kind, id } = event.subject;
    if (kind === "key") return deps.cache.evict(id);
    if (kind === "session") return deps.sessions?.evict(id);
    // Only what the change touches: keys (and persons) whose rights come from that person or
    // group. A membership change also moves the one person named, whose set of groups changed.
    deps.cache.evictDependents({ kind, id });
    if (kind === "group" && event.change === "members") for (const person of event.affected ?? []) deps.cache.evictDependents({ kind: "person", id: person });
  });
  for (const listened of listenedControlSubjects({ internalSecret: deps.internalSecret, internalSecretPrevious: deps.internalSecretPrevious ?? "" })) {
    deps.bus.listen(listened.limits, () => deps.refreshLimits());
    if (deps.repositoryChanged) deps.bus.listen(listened.repositories, deps.repositoryChanged);
    deps.bus.listen(listened.caches, (message) => {
      if ((message as { node?: unknown } | null)?.node === deps.node && deps.node !== undefined) return;
      deps.cache.clear();
      deps.sessions?.clear();
    });
  }
}
