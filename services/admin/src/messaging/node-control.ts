import type { ApiReport, Bus, ControlSubjects, LogQuery, LogReply, SettingsReply } from "@svc/kit";
import type { NodeRegistry } from "../domain/node-registry.js";

/** A node's answer on the metrics subject (kit's node agent): its registry as prom-client JSON. */
export interface MetricsReply {
  node: string;
  service: string;
  metrics: unknown[];
}

/**
 * What admin asks of, and tells, every other node over the control subjects. A gathering
 * answers as soon as every node the heartbeats know has replied and waits the window only
 * for those that have not; this process's own reply is left out (the routes answer it
 * locally, so they work with NATS down), as is a reply that does not have its shape.
 */
export function nodeControlFactory(deps: {
  bus: Pick<Bus, "gather" | "announce">;
  control: Pick<ControlSubjects, "logs" | "metrics" | "openapi" | "limits" | "settingsChanged" | "settings" | "content">;
  nodes: Pick<NodeRegistry, "known">;
  /** This process's node name. */
  self: string;
  gatherMs?: number;
  /**
   * How long a gathering waits, at most, for nodes the heartbeats know: it ends as soon as they
   * have all replied, so this is paid only while one is slow or gone (a dead node leaves the
   * known list when its heartbeats stop). On a busy machine a node may take over 400 ms to
   * answer; leaving it out made the deployment's logs and metrics miss it now and then.
   */
  knownWaitMs?: number;
}) {
  const gatherMs = deps.gatherMs ?? 400;
  const knownWaitMs = deps.knownWaitMs ?? 2_000;
  const gather = async (subject: string, request: unknown): Promise<unknown[]> => {
    const expectNodes = deps.nodes.known()?.filter((n) => n !== deps.self);
    const replies = await deps.bus.gather(subject, request, expectNodes && expectNodes.length > 0 ? Math.max(gatherMs, knownWaitMs) : gatherMs, { expectNodes });
    return replies.filter((r) => typeof (r as { node?: unknown } | null)?.node === "string" && (r as { node: string }).node !== deps.self);
  };
  return {
    async gatherLogs(query: LogQuery): Promise<LogReply[]> {
      return ((await gather(deps.control.logs, query)) as LogReply[]).filter((r) => Array.isArray(r.entries));
    },
    async gatherMetrics(): Promise<MetricsReply[]> {
      return ((await gather(deps.control.metrics, {})) as MetricsReply[]).filter((r) => Array.isArray(r.metrics));
    },
    async gatherSettings(): Promise<SettingsReply[]> {
      return ((await gather(deps.control.settings, {})) as SettingsReply[]).filter((r) => Array.isArray(r.settings));
    },
    async gatherApiReports(): Promise<ApiReport[]> {
      return (await gather(deps.control.openapi, {})) as ApiReport[];
    },
    /**
     * Asks the artifacts nodes what they serve at some paths (the posture's content check): waits
     * for those nodes only, at most knownWaitMs; a node that has not answered by then is left out.
     */
    async gatherContent(request: unknown, expectNodes: string[]): Promise<unknown[]> {
      return deps.bus.gather(deps.control.content, request, Math.max(gatherMs, knownWaitMs), { expectNodes });
    },
    /** Tells every gateway to re-read the tenant's rate-limit override; false when NATS is not connected. */
    announceLimitsChanged(tenant: string): boolean {
      return deps.bus.announce(deps.control.limits, { tenant });
    },
    /** Tells every admin node a run-time setting changed (they read the stored values again); false when NATS is not connected. */
    announceSettingsChanged(name: string): boolean {
      return deps.bus.announce(deps.control.settingsChanged, { name });
    },
  };
}
export type NodeControl = ReturnType<typeof nodeControlFactory>;
