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
if granted <= 0 then return 0 end
redis.call('SET', KEYS[1], tat + granted * emission, 'PX', math.ceil(burst + emission) + 1000)
return granted
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

type LimitedRedis = Redis & { gcra(key: string, emissionMs: number, burstMs: number, wanted: number): Promise<number> };

/** The requests waiting for one bucket's next script call. */
interface Waiting {
  perMinute: number;
  callbacks: ((v: Verdict) => void)[];
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
  const markUp = () => {
    if (down) opts.log.info("Redis is reachable again: rate limits are enforced");
    down = false;
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
    if (!down) {
      down = true;
      opts.log.warn({ err: { message: (err as Error)?.message } }, "Redis is unreachable: requests are served without a rate limit until it is back");
    }
  };

  const waiting = new Map<string, Waiting>();
  let flushScheduled = false;

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

  const decide = async (bucket: string, w: Waiting) => {
    let granted: number;
    try {
      granted = await redis.gcra(bucket, 60_000 / w.perMinute, 60_000, w.callbacks.length);
    } catch (err) {
      markDown(err);
      answer(w, () => "degraded");
      return;
    }
    markUp();
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
      if (next) send(bucket, next);
    });
  };

  function flush(): void {
    flushScheduled = false;
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
      if (redis.status !== "ready" && !connecting()) {
        markDown(new Error(`redis connection is ${redis.status}`));
        return then("degraded");
      }
      const w = waiting.get(bucket);
      if (w) w.callbacks.push(then);
      else waiting.set(bucket, { perMinute, callbacks: [then] });
      // After the requests that arrived in this turn of the event loop have been read.
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
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
    close: () => redis.quit().catch(() => redis.disconnect()),
  };
}

export type RateLimiter = ReturnType<typeof rateLimiterFactory>;
