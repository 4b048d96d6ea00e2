import type { Bus, Heartbeat } from "@svc/kit";
import type { NodeRegistry } from "../domain/node-registry.js";

/**
 * Every node's heartbeat (the control subject `heartbeat`, deployment-wide) goes to the
 * registry the posture reads; the registry sets aside a beat without a node name or fingerprint.
 */
export function collectHeartbeats(deps: { bus: Pick<Bus, "listen">; subject: string; nodes: Pick<NodeRegistry, "record"> }): void {
  deps.bus.listen(deps.subject, (hb) => deps.nodes.record(hb as Heartbeat));
}
