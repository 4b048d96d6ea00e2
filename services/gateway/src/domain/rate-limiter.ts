import { Redis } from "ioredis";
import type { Logger } from "pino";

/**
 * A per-tenant rate limit shared by every gateway, in Redis: a GCRA script (generic cell rate
 * algorithm, equivalent to a token bucket) keyed by tenant. The bucket holds a minute's worth of
 * requests; it refills continuously. Time comes from Redis, so gateways with skewed clocks share
 * one ceiling.
 *
 * Each request is decided by one atomic script call. Requests for the same bucket share calls:
 * at most one call per bucket is under way, and the requests that arrive meanwhile wait for its
 * answer, then go together in the next call. A call takes as many cells as it carries requests
 * and answers how many it granted (the first ones in arrival order are let through, the rest
 * refused), exactly what that many single calls in a row would have answered. No request waits
 * for more than two round trips; under load this is a fraction of the Redis commands, and of
 * the gateway's CPU per request, of one call per request or per event-loop turn.
 *
 * A request need not wait for its call, though, when the bucket is known to have room: each
 * answer says how many cells the bucket has left, and while that (less what this gateway let
 * through since) is above a margin of a tenth of a second's refill and under a second old, a
 * request goes through at once and is charged in the bucket's next call like any other, made
 * within CHARGE_EVERY_MS (so requests in a row share calls too), or within CHARGE_ROOMY_MS
 * while the bucket holds more than ROOMY margins (a second's refill): a client sending one
 * request every few milliseconds, as npm fetches its documents, then costs one call per tenth
 * of a second instead of one per second request (each call wakes the gateway twice and Redis
 * once). For one gateway this never lets through more than the bucket holds (refills only add
 * to it); other gateways' takings meanwhile are what the margin is for. Near an empty bucket
 * every request waits for its verdict again. Requests in a row then pay no round trip to Redis.
 *
 * Redis being down is a value, not an exception: the request is let through (fail open), a
 * warning is logged once per outage, and the outage is counted and reported. Until the first
 * connection (at most CONNECT_GRACE_MS after start) requests wait for it instead. Whether Redis is
 * up follows the outcome of the last command (a script call or the readiness probe's PING): a
 * command that timed out under a burst marks it down, the next one it answers marks it up
 * again. (Only a reconnection used to: one slow answer left the gateway reporting Redis
 * unreachable, ready 503, while Redis answered and limits were enforced.)
 */
const GCRA = `
local emission = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local granted = math.floor((now + burst - tat) / emission)
if granted > wanted then granted = wanted end
if granted <= 0 then return {0, 0} end
tat = tat + granted * emission
redis.call('SET', KEYS[1], tat, 'PX', math.ceil(burst + emission) + 1000)
return {granted, math.floor((now + burst - tat) / emission)}
`;

export type Verdict = "allow" | "refuse" | "unlimited" | "degraded";

/**
 * Which of the deployment's buckets a request is charged to: `tenant` for a key that exists and
 * may be used, `keyless` for everything else (no key, or one that was refused), `reserve` for an
 * administrator's request the tenant bucket refused (see admission.ts).
 */
export type Bucket = "tenant" | "keyless" | "reserve";

/** An administrator's own allowance, per minute, whatever the tenant's ceiling (docs/administration/rate-limits.md). */
export const ADMIN_RESERVE_PER_MINUTE = 60;

export interface RateLimiterOptions {
  redisUrl: string;
  log: Logger;
  /** The tenant this gateway serves: its buckets are keyed by it, and no other. */
  tenant: string;
  /** Requests per minute for a tenant (0 = no limit). */
  limitFor: (tenant: string) => number;
  onDegraded?: () => void;
  keyPrefix?: string;
}

/** The script's answer: cells granted, and cells the bucket has left after them. */
type LimitedRedis = Redis & { gcra(key: string, emissionMs: number, burstMs: number, wanted: number): Promise<[number, number]> };

/**
 * What a bucket had left when Redis last answered, less what this gateway let through since.
 * Refills only add to a bucket, so for this gateway alone it is never more than the truth.
 */
interface Known {
  perMinute: number;
  left: number;
  at: number;
}

/** How long a bucket's last answer is trusted for requests let through before their charge is answered. */
const KNOWN_FOR_MS = 1000;
/**
 * Cells kept back from what a bucket is known to have before a request goes through without
 * waiting: a tenth of a second's refill (at least one), room for what the other gateways of
 * the deployment take meanwhile.
 */
const marginOf = (perMinute: number) => Math.max(1, Math.ceil(perMinute / 600));
const admitted = () => {};
/** How long the charges of requests already let through may wait to go to Redis together. */
const CHARGE_EVERY_MS = 20;
/**
 * The same while the bucket is known to hold more than ROOMY margins: with a second's refill in
 * hand, a tenth of a second of charges in one call cannot empty it unless the deployment takes
 * ten times its ceiling's rate meanwhile.
 */
const CHARGE_ROOMY_MS = 100;
const ROOMY = 10;

/** The requests waiting for one bucket's next script call. */
interface Waiting {
  perMinute: number;
  callbacks: ((v: Verdict) => void)[];
  /** Whether a request waits for its verdict among them (else they are charges only, which may wait for the charges timer). */
  awaited: boolean;
}

export function rateLimiterFactory(opts: RateLimiterOptions) {
  const redis = new Redis(opts.redisUrl, {
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 250,
    connectTimeout: 2000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  }) as LimitedRedis;
  redis.defineCommand("gcra", { numberOfKeys: 1, lua: GCRA });
  const prefix = opts.keyPrefix ?? "svc:ratelimit:";
  // Every Redis key this gateway may write, fixed at start: a request can never name a new one.
  // The keyless and reserve buckets carry the tenant so deployments sharing a Redis do not share them.
  const redisKey: Record<Bucket, string> = {
    tenant: prefix + opts.tenant,
    keyless: `${prefix}~anonymous:${opts.tenant}`,
    reserve: `${prefix}~reserve:${opts.tenant}`,
  };
  let down = false;
  // The first connection takes a moment: not an outage unless it takes longer than this.
  const startedAt = Date.now();
  const CONNECT_GRACE_MS = 5000;
  let everReady = false;
  const connecting = () => !everReady && Date.now() - startedAt < CONNECT_GRACE_MS;
  redis.on("error", () => {
    // Reported through `degraded` below; ioredis retries by itself.
  });
  // One command slower than its timeout on a busy machine is not an outage: Redis counts as
  // down when the connection is lost, or when commands have failed for DOWN_AFTER_MS without one
  // answering in between (what readiness and the posture then report).
  const DOWN_AFTER_MS = 2000;
  let failingSince: number | undefined;
  const markUp = () => {
    if (down) opts.log.info("Redis is reachable again: rate limits are enforced");
    down = false;
    failingSince = undefined;
  };
  redis.on("ready", () => {
    markUp();
    everReady = true;
    flush();
  });
  // What waited for a first connection that never came is let through (fail open) when the grace ends.
  setTimeout(() => flush(), CONNECT_GRACE_MS).unref();

  const markDown = (err: unknown) => {
    opts.onDegraded?.();
    if (connecting()) return;
    const now = Date.now();
    failingSince ??= now;
    if (redis.status === "ready" && now - failingSince < DOWN_AFTER_MS) return;
    if (!down) {
      down = true;
      opts.log.warn({ err: { message: (err as Error)?.message } }, "Redis is unreachable: requests are served without a rate limit until it is back");
    }
  };

  const waiting = new Map<string, Waiting>();
  let flushScheduled = false;
  /** A flush put off while only the charges of requests already let through wait for it, and when it is due. */
  let chargesTimer: NodeJS.Timeout | undefined;
  let chargesDue = 0;

  /** Hands each waiting request its verdict; one caller's mistake does not strand the others. */
  const answer = (w: Waiting, verdictOf: (i: number) => Verdict) => {
    for (let i = 0; i < w.callbacks.length; i++) {
      try {
        w.callbacks[i]!(verdictOf(i));
      } catch (err) {
        opts.log.error({ err }, "a rate-limit verdict could not be handed over");
      }
    }
  };

  const known = new Map<string, Known>();

  const decide = async (bucket: string, w: Waiting) => {
    let granted: number;
    let left: number;
    try {
      [granted, left] = await redis.gcra(bucket, 60_000 / w.perMinute, 60_000, w.callbacks.length);
    } catch (err) {
      known.delete(bucket);
      markDown(err);
      answer(w, () => "degraded");
      return;
    }
    markUp();
    // What arrived meanwhile is charged by the next call: not left for anyone else.
    known.set(bucket, { perMinute: w.perMinute, left: left - (waiting.get(bucket)?.callbacks.length ?? 0), at: Date.now() });
    answer(w, (i) => (i < granted ? "allow" : "refuse"));
  };

  /** Buckets with a script call under way: what arrives meanwhile waits for its answer, then goes in one call. */
  const inFlight = new Set<string>();

  const send = (bucket: string, w: Waiting) => {
    waiting.delete(bucket);
    inFlight.add(bucket);
    void decide(bucket, w).then(() => {
      inFlight.delete(bucket);
      const next = waiting.get(bucket);
      // A request waiting for its verdict goes at once; charges alone wait for their timer
      // (or a short one, when theirs fired while this call was under way).
      if (next?.awaited) send(bucket, next);
      else if (next) scheduleCharges(CHARGE_EVERY_MS);
    });
  };

  /** Makes sure the charges waiting go to Redis within `wait` ms. */
  function scheduleCharges(wait: number): void {
    const due = Date.now() + wait;
    if (flushScheduled || (chargesTimer && chargesDue <= due)) return;
    if (chargesTimer) clearTimeout(chargesTimer);
    chargesTimer = setTimeout(flush, wait).unref();
    chargesDue = due;
  }

  function flush(): void {
    flushScheduled = false;
    if (chargesTimer) clearTimeout(chargesTimer);
    chargesTimer = undefined;
    // Requests that arrive while the first connection is being made wait for it: a gateway just
    // started (the very moment a burst arrives) must not serve them unlimited.
    if (redis.status !== "ready" && connecting()) return;
    for (const [bucket, w] of [...waiting]) if (!inFlight.has(bucket)) send(bucket, w);
  }

  return {
    /**
     * Takes one request from a bucket of the tenant's and calls `then` with the verdict: at once
     * when there is no limit or Redis is down, else once the bucket's next script call answers.
     * Never throws. (A callback rather than a promise: this runs for every request.)
     */
    take(which: Bucket, then: (verdict: Verdict) => void): void {
      const ceiling = opts.limitFor(opts.tenant);
      // No limit for the tenant: nothing to reserve either.
      if (ceiling <= 0) return then("unlimited");
      const perMinute = which === "reserve" ? ADMIN_RESERVE_PER_MINUTE : ceiling;
      const bucket = redisKey[which];
      // A bucket known to hold more than the margin lets the request through at once; it is
      // charged all the same, in the bucket's next call (its answer is not waited for).
      const k = known.get(bucket);
      const through = k !== undefined && k.perMinute === perMinute && k.left > marginOf(perMinute) && Date.now() - k.at < KNOWN_FOR_MS;
      if (through) k.left--;
      if (redis.status !== "ready" && !connecting()) {
        markDown(new Error(`redis connection is ${redis.status}`));
        return then("degraded");
      }
      const charge = through ? admitted : then;
      const w = waiting.get(bucket);
      if (w) {
        w.callbacks.push(charge);
        w.awaited ||= !through;
      } else waiting.set(bucket, { perMinute, callbacks: [charge], awaited: !through });
      // After the requests that arrived in this turn of the event loop have been read.
      if (through) {
        // Nobody waits for a charge: it goes with the next call, at most CHARGE_EVERY_MS later
        // (CHARGE_ROOMY_MS with plenty of room), so requests one after another cost a call every
        // few milliseconds, not one each. A bucket running low brings a later charge forward.
        scheduleCharges(k.left > ROOMY * marginOf(perMinute) ? CHARGE_ROOMY_MS : CHARGE_EVERY_MS);
      } else if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
      if (through) then("allow");
    },
    /**
     * Asks Redis (PING) and returns whether it answered, updating what `up()` reports: the
     * readiness probe's check, so health recovers without traffic too.
     */
    probe: async (): Promise<boolean> => {
      if (redis.status !== "ready") {
        markDown(new Error(`redis connection is ${redis.status}`));
        return !down;
      }
      try {
        await redis.ping();
        markUp();
        return true;
      } catch (err) {
        markDown(err);
        return !down;
      }
    },
    /** false during an outage (not while the first connection is still being made). */
    up: () => !down && (redis.status === "ready" || connecting()),
    close: () => {
      // Charges still put off go first (quit waits for the answers of what was sent before it).
      flush();
      return redis.quit().catch(() => redis.disconnect());
    },
  };
}

export type RateLimiter = ReturnType<typeof rateLimiterFactory>;
