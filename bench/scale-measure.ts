// What a scale run measures at each size, beyond the rates of the API sample: listings, key
// checks, artifact GETs, a retention + reclaim walk over the whole index (with the walker's peak
// memory), and a change to the large group.
import type { CredentialChanged } from "@svc/contracts";
import type { Bus } from "@svc/kit";
import type pg from "pg";
import { resetPeakRss, statusKiB } from "./procstat.js";
import { median, quantile, send, sleep, timings, type Answer, type Api } from "./scale-client.js";
import { filePath, GROUP, REPOSITORY, SMALL_FILE } from "./scale-fill.js";
import { log } from "./options.js";

const PAGE = 500;
const LISTING_RUNS = 5;
const HOT_RUNS = 200;
/** The walk a scale run defines and starts: retention and reclaim over every index entry. */
export const SCALE_WALK = "scale";

export interface Listing {
  first: number;
  deep: number;
}

/** Median milliseconds of the first page and of the last full one (`deepCursor`: the item `PAGE` + 1 from the end), `PAGE` items each. */
async function listing(get: (after: string | undefined) => Promise<Answer>, deepCursor: string): Promise<Listing> {
  const check = (a: Answer) => {
    if (a.status !== 200) throw new Error(`a listing answered ${a.status}: ${a.text.slice(0, 300)}`);
    const items = JSON.parse(a.text) as unknown[];
    if (items.length !== PAGE) throw new Error(`a listing page held ${items.length} items, not ${PAGE}`);
    return a;
  };
  return {
    first: median(await timings(LISTING_RUNS, async () => check(await get(undefined)))),
    deep: median(await timings(LISTING_RUNS, async () => check(await get(deepCursor)))),
  };
}

export interface Listings {
  credentials: Listing;
  files: Listing;
  members: Listing;
}

/**
 * Pages of 500 through the gateway's API: files (`/api/repositories/default/files`, what the
 * console's browser reads), credentials and the group's members. The deep page's cursor is read
 * from the database in the order each listing pages in, so the bench holds no list of a million.
 */
export async function measureListings(api: Api, db: pg.Client): Promise<Listings> {
  const page = (after: string | undefined) => `limit=${PAGE}${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`;
  const cursor = async (query: string, params: unknown[] = []) => (await db.query<{ c: string }>(`${query} offset ${PAGE} limit 1`, params)).rows[0]!.c;
  return {
    files: await listing(
      (after) => api("GET", `/api/repositories/${REPOSITORY}/files?${page(after)}`),
      await cursor(`select path as c from artifacts.artifacts where repository = $1 order by path collate "C" desc`, [REPOSITORY]),
    ),
    credentials: await listing((after) => api("GET", `/api/credentials?${page(after)}`), await cursor("select id as c from auth.credentials order by id desc")),
    members: await listing(
      (after) => api("GET", `/api/groups/${GROUP}/members?${page(after)}`),
      await cursor("select principal_id as c from auth.memberships where group_name = $1 order by principal_id desc", [GROUP]),
    ),
  };
}

/** p50 and p99 of some milliseconds. */
export interface Spread {
  p50: number;
  p99: number;
}
const spread = (xs: number[]): Spread => ({ p50: median(xs), p99: quantile(xs, 0.99) });

export interface KeyChecks {
  /** Each fresh key's first request (the gateway asks auth, which looks the key up). */
  cold: Spread;
  /** One key again and again (the gateway's cache answers). */
  hot: Spread;
}

/** A GET of one small file with `key`, through the gateway. */
export const fetchWithKey = (gatewayUrl: string, key: string) => async (): Promise<Answer> => {
  const a = await send(`${gatewayUrl}/repository/${REPOSITORY}/${SMALL_FILE}`, { headers: { "service-repository-key": key } });
  if (a.status !== 200) throw new Error(`GET with a key answered ${a.status}: ${a.text.slice(0, 300)}`);
  return a;
};

/** `keys` were minted through the API just now and never used: the connection is warm, so a first request measures the key's resolution. */
export async function measureKeyChecks(gatewayUrl: string, keys: string[]): Promise<KeyChecks> {
  const cold: number[] = [];
  for (const key of keys) cold.push((await fetchWithKey(gatewayUrl, key)()).ms);
  const hot = await timings(HOT_RUNS, fetchWithKey(gatewayUrl, keys[0]!));
  return { cold: spread(cold), hot: spread(hot) };
}

/**
 * GETs through the gateway of `n` bulk-filled files spread evenly over the `files` filled so
 * far, in a shuffled order (so neighbours in the index are not read one after another).
 */
export async function measureGets(gatewayUrl: string, key: string, files: number, n: number): Promise<Spread> {
  const picks = Array.from({ length: n }, (_, k) => Math.floor(((k + 0.5) * files) / n));
  for (let i = picks.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [picks[i], picks[j]] = [picks[j]!, picks[i]!];
  }
  const ms: number[] = [];
  for (const i of picks) {
    const a = await send(`${gatewayUrl}/repository/${REPOSITORY}/${filePath(i)}`, { headers: { "service-repository-key": key } });
    if (a.status !== 200 || a.text.length === 0) throw new Error(`GET ${filePath(i)} answered ${a.status}: ${a.text.slice(0, 300)}`);
    ms.push(a.ms);
  }
  return spread(ms);
}

interface RunRecord {
  id: string;
  walk: string;
  started: string;
  ended: string | null;
  outcome: string;
  entries: number;
  bytes: number;
  blobs?: number;
  counts: Record<string, Record<string, number>>;
  problems: { count: number };
}

export interface Walk {
  /** From the run record: started to ended. */
  seconds: number;
  entries: number;
  /** Blobs the run saw (undefined when the record does not say). */
  blobs: number | undefined;
  outcome: string;
  /** Artifacts the retention job removed (the policy removes none: 0 expected). */
  removed: number;
  /** Blobs the reclaim job removed (every filled blob is referenced: 0 expected). */
  reclaimed: number;
  problems: number;
  /** The walker's resident set before the walk and its peak during it, in MiB (undefined when /proc does not say). */
  rssBeforeMiB: number | undefined;
  peakRssMiB: number | undefined;
  /** Whether the peak counts from the walk's start (else from the walker's start). */
  peakSinceWalk: boolean;
}

/**
 * The walk `SCALE_WALK` (retention and reclaim, never on a schedule) and a retention policy on
 * the repository that matches every bulk-filled file but removes none of them (files younger
 * than ten years), so retention judges every entry and the index keeps its size.
 */
export async function defineScaleWalk(api: Api): Promise<void> {
  await api("PUT", `/api/repositories/${REPOSITORY}/retention`, { path: "scale", maxAge: "P3650D" });
  await api("POST", "/api/walks", { name: SCALE_WALK, schedule: "0 0 3 * * *", enabled: false, jobs: ["retention", "reclaim"] }, [201]);
}

/** Runs `SCALE_WALK` until its record has ended; the walker's peak resident set is read from /proc around it. */
export async function measureWalk(api: Api, walkerPid: number | undefined): Promise<Walk> {
  const rssBefore = walkerPid === undefined ? undefined : statusKiB(walkerPid, "VmRSS");
  const peakSinceWalk = walkerPid !== undefined && resetPeakRss(walkerPid);
  let run: RunRecord | undefined;
  // A walk already going over the store (a scheduled one) answers 409: wait for it.
  for (let waited = 0; !run; waited += 500) {
    const a = await api<RunRecord>("POST", `/api/walks/${SCALE_WALK}/run`, undefined, [202, 409]);
    if (a.status === 202) run = a.json;
    else if (waited > 600_000) throw new Error(`the walk kept answering 409: ${a.text.slice(0, 300)}`);
    else await sleep(500);
  }
  log(`scale: walk ${run.walk} run ${run.id} started`);
  for (;;) {
    await sleep(250);
    const runs = (await api<RunRecord[]>("GET", `/api/walks/${SCALE_WALK}/runs`)).json;
    const r = runs.find((x) => x.id === run.id);
    if (!r?.ended) continue;
    const peak = walkerPid === undefined ? undefined : statusKiB(walkerPid, "VmHWM");
    const mib = (kib: number | undefined) => (kib === undefined ? undefined : kib / 1024);
    return {
      seconds: (Date.parse(r.ended) - Date.parse(r.started)) / 1000,
      entries: r.entries,
      blobs: typeof r.blobs === "number" ? r.blobs : undefined,
      outcome: r.outcome,
      removed: r.counts.retention?.removed ?? 0,
      reclaimed: r.counts.reclaim?.blobs ?? 0,
      problems: r.problems.count,
      rssBeforeMiB: mib(rssBefore),
      peakRssMiB: mib(peak),
      peakSinceWalk,
    };
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
