import type { Heartbeat } from "@svc/kit";

/** The latest heartbeat of every node heard from recently. */
export function nodeRegistryFactory(opts: { staleAfterMs?: number; now?: () => number } = {}) {
  const nodes = new Map<string, { hb: Heartbeat; seen: number }>();
  const stale = opts.staleAfterMs ?? 20_000;
  const now = opts.now ?? Date.now;
  return {
    record(hb: Heartbeat): void {
      if (typeof hb?.node !== "string" || typeof hb.fingerprint !== "string") return;
      nodes.set(hb.node, { hb, seen: now() });
    },
    /** Nodes heard from within the staleness window. */
    live(): Heartbeat[] {
      const cutoff = now() - stale;
      for (const [k, v] of nodes) if (v.seen < cutoff) nodes.delete(k);
      return [...nodes.values()].map((v) => v.hb);
    },
  };
}
export type NodeRegistry = ReturnType<typeof nodeRegistryFactory>;
