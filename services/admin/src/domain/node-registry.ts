import type { Heartbeat } from "@svc/kit";

/** Kit's node agent beats every 5 s: a registry younger than that (and some slack) may not have heard every node yet. */
const WARM_UP_MS = 7_000;

/** The latest heartbeat of every node heard from recently. */
export function nodeRegistryFactory(opts: { staleAfterMs?: number; warmUpMs?: number; now?: () => number } = {}) {
  const nodes = new Map<string, { hb: Heartbeat; seen: number }>();
  const stale = opts.staleAfterMs ?? 20_000;
  const now = opts.now ?? Date.now;
  const listeningSince = now();
  const warmUp = opts.warmUpMs ?? WARM_UP_MS;
  const live = (): Heartbeat[] => {
    const cutoff = now() - stale;
    for (const [k, v] of nodes) if (v.seen < cutoff) nodes.delete(k);
    return [...nodes.values()].map((v) => v.hb);
  };
  return {
    record(hb: Heartbeat): void {
      if (typeof hb?.node !== "string" || typeof hb.fingerprint !== "string") return;
      nodes.set(hb.node, { hb, seen: now() });
    },
    /** Nodes heard from within the staleness window. */
    live,
    /**
     * The names of the nodes that exist, as far as the heartbeats tell; undefined until the
     * registry has listened for a whole heartbeat interval, when it cannot know them all yet.
     */
    known(): string[] | undefined {
      if (now() - listeningSince < warmUp) return undefined;
      return live().map((hb) => hb.node);
    },
  };
}
export type NodeRegistry = ReturnType<typeof nodeRegistryFactory>;
