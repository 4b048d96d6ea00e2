import type { Heartbeat } from "@svc/kit";
import type { Advisory } from "./posture.js";

/**
 * The spec's critical advisory "Two servers answer the same path with different content": the
 * posture asks every artifacts node what it serves at a sample of paths (the `content` control
 * subject; services/artifacts content-report.ts answers) and compares. Read-only, bounded (a
 * sample, a few bytes read per blob), cached for a short while so a posture page does not ask
 * every time, and asked again as soon as the set of artifacts nodes changes.
 *
 * It must stay silent on a healthy deployment: one node; nodes on one store and one database; a
 * path changed within the last minute (not sampled, and an answer that calls it young is left
 * out); a node that did not answer in time (not counted). A difference is asked about again
 * before it is raised, so a change that lands between two nodes' answers is not taken for one.
 */

export interface ContentPath {
  repository: string;
  path: string;
}

/** One node's answer about one path (as content-report.ts sends it). */
export interface ContentAnswer extends ContentPath {
  sha256?: string;
  size?: number;
  blob?: "ok" | "missing" | "corrupt";
  young?: boolean;
}

export interface ContentReply {
  node: string;
  storage: { kind: string; fingerprint: string };
  database: string;
  sample: ContentPath[];
  answers: ContentAnswer[];
}

/** A path's content as one node would serve it: equal keys, equal content. */
export function contentKey(a: ContentAnswer): string {
  if (a.sha256 === undefined) return "absent";
  if (a.blob === "missing" || a.blob === "corrupt") return `${a.sha256}:${a.blob}`;
  return `${a.sha256}:${a.size}`;
}

/** Whether a key is content a download would serve whole (not absent, not missing, not damaged). */
const servable = (key: string): boolean => key !== "absent" && !key.endsWith(":missing") && !key.endsWith(":corrupt");

/**
 * The nodes that stand apart from the rest: those whose value is not the majority's. A tie is
 * broken in favour of a value that is servable (for content: a node that has the blob over one
 * that lacks it); a tie that still stands names every node, since none can be taken as right.
 */
export function oddOnes(values: Map<string, string>, isGood: (value: string) => boolean = () => true): string[] {
  const counts = new Map<string, number>();
  for (const v of values.values()) counts.set(v, (counts.get(v) ?? 0) + 1);
  if (counts.size < 2) return [];
  const top = Math.max(...counts.values());
  let candidates = [...counts].filter(([, n]) => n === top).map(([v]) => v);
  const good = candidates.filter(isGood);
  if (good.length > 0) candidates = good;
  const reference = candidates.length === 1 ? candidates[0] : undefined;
  return [...values].filter(([, v]) => v !== reference).map(([node]) => node).sort();
}

export interface Divergence {
  /** Nodes that disagree with the majority on some path. */
  nodes: string[];
  /** The paths they disagree on, as repository/path. */
  paths: string[];
  /** What differs about the odd nodes: their database, their store, or neither (blobs missing or damaged on a shared store). */
  database: boolean;
  store: boolean;
  kinds: string[];
}

/** Compares the nodes' answers path by path. Nodes that did not answer are not in `replies` and count for nothing. */
export function compareContent(replies: ContentReply[]): Divergence | undefined {
  const byPath = new Map<string, Map<string, string>>();
  const young = new Set<string>();
  for (const r of replies) {
    for (const a of r.answers) {
      const k = `${a.repository}/${a.path}`;
      if (a.young) young.add(k);
      let m = byPath.get(k);
      if (!m) byPath.set(k, (m = new Map()));
      m.set(r.node, contentKey(a));
    }
  }
  const odd = new Set<string>();
  const paths: string[] = [];
  for (const [k, m] of byPath) {
    if (young.has(k) || m.size < 2) continue;
    const o = oddOnes(m, servable);
    if (o.length === 0) continue;
    paths.push(k);
    for (const n of o) odd.add(n);
  }
  if (odd.size === 0) return undefined;
  const identities = identityOddOnes(replies, [...odd]);
  const oddReplies = replies.filter((r) => odd.has(r.node));
  return {
    nodes: [...odd].sort(),
    paths: paths.sort(),
    database: oddReplies.some((r) => identities.database.includes(r.node)),
    store: oddReplies.some((r) => identities.store.includes(r.node)),
    kinds: [...new Set(replies.map((r) => r.storage.kind))].sort(),
  };
}

/**
 * Nodes whose database or blob store is not the one most nodes use. A tie is broken in favour of
 * what the nodes `suspect` leaves out use (those the content comparison found serving the same).
 */
export function identityOddOnes(replies: ContentReply[], suspect: readonly string[] = []): { database: string[]; store: string[] } {
  const trusted = replies.filter((r) => !suspect.includes(r.node));
  const store = (r: ContentReply) => `${r.storage.kind}:${r.storage.fingerprint}`;
  const held = (of: (r: ContentReply) => string) => {
    const values = new Set(trusted.map(of));
    return (v: string) => values.has(v);
  };
  return {
    database: oddOnes(new Map(replies.map((r) => [r.node, r.database])), held((r) => r.database)),
    store: oddOnes(new Map(replies.map((r) => [r.node, store(r)])), held(store)),
  };
}

/** The setting to check for a store: the filesystem's root, or the storage settings of another backend. */
const storeSetting = (kinds: string[]): string => (kinds.length === 1 && kinds[0] === "filesystem" ? "svc.filesystem-root" : "svc.storage");

export function contentAdvisories(d: Divergence | undefined, replies: ContentReply[]): Advisory[] {
  const out: Advisory[] = [];
  if (d) {
    const shown = d.paths.slice(0, 3).join(", ") + (d.paths.length > 3 ? ` and ${d.paths.length - 3} more` : "");
    const settings = [...(d.database ? ["svc.database-url"] : []), ...(d.store || !d.database ? [storeSetting(d.kinds)] : [])];
    out.push({
      name: "svc.nodes.content-differs",
      severity: "critical",
      summary: `${d.nodes.length} artifacts node(s) serve different content than the others for the same path: ${shown}`,
      why: "A client gets other bytes, a 404 or an error for one path depending on which node answers: builds stop being reproducible and checksums fail at random.",
      setting: settings.join(", "),
      remedy: "point every artifacts node at the same database and the same blob store (docs/operations/posture.md); if they already share them, the named nodes lack or misread blobs of that store: check its volume or bucket on those nodes",
      nodes: d.nodes,
    });
  }
  const ids = identityOddOnes(replies, d?.nodes);
  const apart = [...new Set([...ids.database, ...ids.store])].sort();
  if (apart.length > 0) {
    const settings = [...(ids.database.length > 0 ? ["svc.database-url"] : []), ...(ids.store.length > 0 ? [storeSetting([...new Set(replies.map((r) => r.storage.kind))].sort())] : [])];
    out.push({
      name: "svc.nodes.storage-differs",
      severity: "warning",
      summary: `${apart.length} artifacts node(s) use a ${[...(ids.database.length > 0 ? ["database"] : []), ...(ids.store.length > 0 ? ["blob store"] : [])].join(" and ")} other than the rest of the deployment`,
      why: "Nodes of one deployment share one index and one store; one that points elsewhere serves its own content, or none, for paths the others serve.",
      setting: settings.join(", "),
      remedy: "give every artifacts node the same settings for these (the same volume mounted at the same path, the same bucket, endpoint and prefix, the same database)",
      nodes: apart,
    });
  }
  return out;
}

const isPath = (p: unknown): p is ContentPath => typeof (p as ContentPath)?.repository === "string" && typeof (p as ContentPath)?.path === "string";

/** A reply of the shape content-report.ts sends, or undefined. */
export function readContentReply(raw: unknown): ContentReply | undefined {
  const r = raw as Partial<ContentReply> | null;
  if (typeof r?.node !== "string" || typeof r.database !== "string" || typeof r.storage?.kind !== "string" || typeof r.storage.fingerprint !== "string") return undefined;
  if (!Array.isArray(r.sample) || !Array.isArray(r.answers)) return undefined;
  return { node: r.node, database: r.database, storage: { kind: r.storage.kind, fingerprint: r.storage.fingerprint }, sample: r.sample.filter(isPath), answers: r.answers.filter(isPath) };
}

/** How old a path must be to be sampled: a publish has reached every node's view by then. */
export const CONTENT_MIN_AGE_MS = 60_000;
/** Paths compared per check (the artifacts nodes answer at most 64). */
export const CONTENT_SAMPLE = 48;

export function contentCheckFactory(deps: {
  /** Asks every artifacts node; answers with the replies that came in time. */
  ask: (request: unknown, expectNodes: string[]) => Promise<unknown[]>;
  nodes: () => Heartbeat[];
  ttlMs?: number;
  now?: () => number;
}) {
  const ttl = deps.ttlMs ?? 30_000;
  const now = deps.now ?? Date.now;
  let cached: { key: string; at: number; value: Promise<Advisory[]> } | undefined;

  const ask = async (request: unknown, expect: string[]): Promise<ContentReply[]> => {
    const replies = (await deps.ask(request, expect)).map(readContentReply).filter((r): r is ContentReply => r !== undefined);
    const seen = new Set<string>();
    return replies.filter((r) => !seen.has(r.node) && seen.add(r.node));
  };

  const run = async (expect: string[]): Promise<Advisory[]> => {
    const first = await ask({ sample: 16, olderThanMs: CONTENT_MIN_AGE_MS }, expect);
    if (first.length < 2) return [];
    const paths = new Map<string, ContentPath>();
    for (const r of first) for (const p of r.sample) if (paths.size < CONTENT_SAMPLE) paths.set(`${p.repository}/${p.path}`, p);
    let divergence: Divergence | undefined;
    let replies = first;
    if (paths.size > 0) {
      replies = await ask({ paths: [...paths.values()], olderThanMs: CONTENT_MIN_AGE_MS }, expect);
      divergence = compareContent(replies);
      if (divergence) {
        // Asked again about those paths: a difference that was a change landing between answers is gone now.
        const again = await ask({ paths: divergence.paths.map((k) => paths.get(k)!).filter(Boolean), olderThanMs: CONTENT_MIN_AGE_MS }, expect);
        divergence = compareContent(again);
        if (divergence) replies = again;
      }
    }
    return contentAdvisories(divergence, replies.length >= 2 ? replies : first);
  };

  return {
    /** The advisories of the comparison, from the cache while it is fresh and the artifacts nodes are the same. */
    advisories(): Promise<Advisory[]> {
      const expect = deps
        .nodes()
        .filter((n) => n.service === "artifacts")
        .map((n) => n.node)
        .sort();
      // One node (or none) has nobody to disagree with.
      if (expect.length < 2) return Promise.resolve([]);
      const key = expect.join(",");
      if (!cached || cached.key !== key || now() - cached.at > ttl) {
        const value = run(expect).catch(() => {
          cached = undefined; // not kept: the next posture asks again
          return [] as Advisory[];
        });
        cached = { key, at: now(), value };
      }
      return cached.value;
    },
  };
}
export type ContentCheck = ReturnType<typeof contentCheckFactory>;
