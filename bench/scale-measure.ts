// What a scale run measures at each size, beyond the rates of filling it: listings, key checks,
// a walk of the store and a change to the large group.
import { ARTIFACTS_INTERNAL, encodePrincipal, type CredentialChanged } from "@svc/contracts";
import { identityHeaders, type Bus } from "@svc/kit";
import { median, quantile, send, sleep, timings, type Answer, type Api } from "./scale-client.js";
import { GROUP, REPOSITORY, SMALL_FILE, type ScaleData } from "./scale-fill.js";
import { log } from "./options.js";

const PAGE = 500;
const LISTING_RUNS = 5;
const COLD_KEYS = 10;
const HOT_RUNS = 200;

/**
 * The cursor of the last full page: `PAGE` items follow it, so it holds as many as the first
 * page does and the two differ only by how deep the page starts.
 */
const lastPageCursor = (items: string[]) => [...items].sort()[Math.max(0, items.length - PAGE - 1)]!;

export interface Listing {
  first: number;
  deep: number;
}

/** Median milliseconds of the first page and of the last full one, `PAGE` items each. */
async function listing(get: (after: string | undefined) => Promise<Answer>, items: string[]): Promise<Listing> {
  const check = (a: Answer) => {
    if (a.status !== 200) throw new Error(`a listing answered ${a.status}: ${a.text.slice(0, 300)}`);
    return a;
  };
  const cursor = lastPageCursor(items);
  return {
    first: median(await timings(LISTING_RUNS, async () => check(await get(undefined)))),
    deep: median(await timings(LISTING_RUNS, async () => check(await get(cursor)))),
  };
}

export interface Listings {
  credentials: Listing;
  files: Listing;
  members: Listing;
}

/**
 * Credentials and group members through the gateway's API; files through the artifacts
 * service's metadata pages (the only listing of files there is, the one the walker reads),
 * signed as a system principal the way the walker is.
 */
export async function measureListings(api: Api, artifactsUrl: string, internalSecret: string, tenant: string, data: ScaleData): Promise<Listings> {
  const page = (after: string | undefined) => `limit=${PAGE}${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`;
  const files = async (after: string | undefined) => {
    const path = `${ARTIFACTS_INTERNAL.artifactsPath(REPOSITORY)}?${page(after)}`;
    return send(artifactsUrl + path, { headers: identityHeaders(internalSecret, "GET", path, encodePrincipal({ kind: "system", tenant, id: "bench" })) });
  };
  return {
    credentials: await listing((after) => api("GET", `/api/credentials?${page(after)}`), data.keyIds),
    files: await listing(files, data.paths),
    members: await listing((after) => api("GET", `/api/groups/${GROUP}/members?${page(after)}`), data.members),
  };
}

export interface KeyChecks {
  /** Median and slowest first request of a fresh key (the gateway asks auth). */
  coldMedian: number;
  coldMax: number;
  /** Median and p99 of the same key again (the gateway's cache answers). */
  hotMedian: number;
  hotP99: number;
}

/** A GET of one small file with `key`, through the gateway. */
export const fetchWithKey = (gatewayUrl: string, key: string) => async (): Promise<Answer> => {
  const a = await send(`${gatewayUrl}/repository/${REPOSITORY}/${SMALL_FILE}`, { headers: { "service-repository-key": key } });
  if (a.status !== 200) throw new Error(`GET with a fresh key answered ${a.status}: ${a.text.slice(0, 300)}`);
  return a;
};

/** Fresh keys (read-only everywhere) are minted first; the connection is warm, so a cold request measures the key's resolution. */
export async function measureKeyChecks(api: Api, gatewayUrl: string): Promise<KeyChecks & { hotKey: string }> {
  const keys: string[] = [];
  for (let i = 0; i < COLD_KEYS; i++) {
    const minted = (await api<{ id: string; key: string }>("POST", "/api/credentials", { label: "scale-check" }, [201])).json;
    await api("POST", `/api/credentials/${minted.id}/grants`, { scope: "*", tokens: ["read-only"] });
    keys.push(minted.key);
  }
  const cold: number[] = [];
  for (const key of keys) cold.push((await fetchWithKey(gatewayUrl, key)()).ms);
  const hot = await timings(HOT_RUNS, fetchWithKey(gatewayUrl, keys[0]!));
  return { coldMedian: median(cold), coldMax: Math.max(...cold), hotMedian: median(hot), hotP99: quantile(hot, 0.99), hotKey: keys[0]! };
}

interface RunRecord {
  id: string;
  walk: string;
  ended: string | null;
  outcome: string;
  entries: number;
}

/** "Walk the store now" until its run record has ended: seconds, and the entries it saw. */
export async function measureWalk(api: Api): Promise<{ seconds: number; entries: number; outcome: string }> {
  let run: RunRecord | undefined;
  // A walk already going over the store (a scheduled one at start) answers 409: wait for it.
  for (let waited = 0; !run; waited += 500) {
    const a = await api<RunRecord>("POST", "/api/walks/run", undefined, [202, 409]);
    if (a.status === 202) run = a.json;
    else if (waited > 600_000) throw new Error(`walk the store now kept answering 409: ${a.text.slice(0, 300)}`);
    else await sleep(500);
  }
  const t0 = performance.now();
  log(`scale: walk ${run.walk} run ${run.id} started`);
  for (;;) {
    const last = (await api<{ lastRun: RunRecord | null }>("GET", `/api/walks/${encodeURIComponent(run.walk)}`)).json.lastRun;
    if (last && last.id === run.id && last.ended) return { seconds: (performance.now() - t0) / 1000, entries: last.entries, outcome: last.outcome };
    await sleep(100);
  }
}

export interface GroupChange {
  /** Medians over `GROUP_RUNS` grants and removals: the API call's own time. */
  grantMs: number;
  /** From sending the call until its credential.changed was seen on NATS; undefined when one was not seen within 30 s. */
  grantAnnouncedMs: number | undefined;
  /** Every time, a member's effective rights showed the grant right after the call. */
  visible: boolean;
  revokeMs: number;
  revokeAnnouncedMs: number | undefined;
  /** The hot key's next request after each grant: stays hot when a change evicts only what it touches. */
  hotAfterMs: number;
}

const GROUP_RUNS = 5;

/** Waits for credential.changed events as a gateway would see them. */
export function announcements(bus: Bus) {
  const waiters = new Set<{ match: (e: CredentialChanged) => boolean; seen: (at: number) => void }>();
  bus.subscribe("credential.changed", (e) => {
    for (const w of waiters) if (w.match(e)) (waiters.delete(w), w.seen(performance.now()));
  });
  return {
    /** Start waiting before making the change; resolves to when it was seen, or undefined after `timeoutMs`. */
    next(match: (e: CredentialChanged) => boolean, timeoutMs = 30_000): Promise<number | undefined> {
      return new Promise((resolve) => {
        const w = { match, seen: (at: number) => (clearTimeout(timer), resolve(at)) };
        const timer = setTimeout(() => (waiters.delete(w), resolve(undefined)), timeoutMs);
        waiters.add(w);
      });
    },
  };
}
export type Announcements = ReturnType<typeof announcements>;

/** A grant to the group and its removal, `GROUP_RUNS` times, each timed as a call and until announced. */
export async function measureGroupChange(api: Api, changes: Announcements, member: string, hot: () => Promise<Answer>): Promise<GroupChange> {
  const ofGroup = (e: CredentialChanged) => e.subject.kind === "group" && e.subject.id === GROUP && e.change === "grants";
  const timedChange = async (method: string, path: string, body?: unknown) => {
    const seen = changes.next(ofGroup);
    const t0 = performance.now();
    const a = await api(method, path, body);
    const at = await seen;
    return { ms: a.ms, announcedMs: at === undefined ? undefined : at - t0 };
  };
  const runs: Array<{ grant: { ms: number; announcedMs?: number }; revoke: { ms: number; announcedMs?: number }; hotAfterMs: number; visible: boolean }> = [];
  for (let i = 0; i < GROUP_RUNS; i++) {
    const grant = await timedChange("POST", `/api/groups/${GROUP}/grants`, { scope: REPOSITORY, tokens: ["read-only"] });
    const hotAfterMs = (await hot()).ms;
    const rights = (await api<{ grants: { via: string }[] }>("GET", `/api/principals/rights?id=${encodeURIComponent(member)}`)).json;
    const revoke = await timedChange("DELETE", `/api/groups/${GROUP}/grants/${REPOSITORY}`);
    runs.push({ grant, revoke, hotAfterMs, visible: rights.grants.some((g) => g.via === `group:${GROUP}`) });
  }
  const announced = (xs: Array<number | undefined>) => (xs.every((x) => x !== undefined) ? median(xs as number[]) : undefined);
  return {
    grantMs: median(runs.map((r) => r.grant.ms)),
    grantAnnouncedMs: announced(runs.map((r) => r.grant.announcedMs)),
    visible: runs.every((r) => r.visible),
    revokeMs: median(runs.map((r) => r.revoke.ms)),
    revokeAnnouncedMs: announced(runs.map((r) => r.revoke.announcedMs)),
    hotAfterMs: median(runs.map((r) => r.hotAfterMs)),
  };
}
