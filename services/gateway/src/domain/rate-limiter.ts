import { Redis } from "ioredis";
import type { Logger } from "pino";

/**
 * A per-tenant rate limit shared by every gateway, in Redis, with one atomic round trip per
 * request: a GCRA script (generic cell rate algorithm, equivalent to a token bucket) keyed by
 * tenant. The bucket holds a minute's worth of requests; it refills continuously. Time comes
 * from Redis, so gateways with skewed clocks share one ceiling.
 *
 * Redis being down is a value, not an exception: the request is let through (fail open), a
 * warning is logged once per outage, and the outage is counted and reported.
 */
const GCRA = `
local emission = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local next_tat = tat + emission
if next_tat - now > burst then return 0 end
redis.call('SET', KEYS[1], next_tat, 'PX', math.ceil(burst + emission) + 1000)
return 1
`;

export type Verdict = "allow" | "refuse" | "unlimited" | "degraded";

export interface RateLimiterOptions {
  redisUrl: string;
  log: Logger;
  /** Requests per minute for a tenant (0 = no limit). */
  limitFor: (tenant: string) => number;
  onDegraded?: () => void;
  keyPrefix?: string;
}

type LimitedRedis = Redis & { gcra(key: string, emissionMs: number, burstMs: number): Promise<number> };

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
  let down = false;
  // The first connection takes a moment: not an outage unless it takes longer than this.
  const startedAt = Date.now();
  const CONNECT_GRACE_MS = 5000;
  let everReady = false;
  redis.on("error", () => {
    // Reported through `degraded` below; ioredis retries by itself.
  });
  redis.on("ready", () => {
    if (down) opts.log.info("Redis is reachable again: rate limits are enforced");
    down = false;
    everReady = true;
  });

  const markDown = (err: unknown) => {
    opts.onDegraded?.();
    if (!everReady && Date.now() - startedAt < CONNECT_GRACE_MS) return;
    if (!down) {
      down = true;
      opts.log.warn({ err: { message: (err as Error)?.message } }, "Redis is unreachable: requests are served without a rate limit until it is back");
    }
  };

  return {
    /**
     * Takes one request from the tenant's bucket (`~anonymous` is the keyless callers' bucket).
     * Never throws.
     */
    async take(bucket: string, tenantForLimit: string): Promise<Verdict> {
      const perMinute = opts.limitFor(tenantForLimit);
      if (perMinute <= 0) return "unlimited";
      if (redis.status !== "ready") {
        markDown(new Error(`redis connection is ${redis.status}`));
        return "degraded";
      }
      try {
        const ok = await redis.gcra(prefix + bucket, 60_000 / perMinute, 60_000);
        return ok === 1 ? "allow" : "refuse";
      } catch (err) {
        markDown(err);
        return "degraded";
      }
    },
    /** false during an outage (not while the first connection is still being made). */
    up: () => !down && (redis.status === "ready" || (!everReady && Date.now() - startedAt < CONNECT_GRACE_MS)),
    close: () => redis.quit().catch(() => redis.disconnect()),
  };
}

export type RateLimiter = ReturnType<typeof rateLimiterFactory>;
