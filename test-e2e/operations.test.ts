import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startInfra, type Infra } from "@svc/devstack";
import { startPrometheus } from "@svc/devstack/prometheus";
import { startSuite, type Suite } from "./suite.js";

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let v = await fn();
  while (!ok(v) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 250));
    v = await fn();
  }
  return v;
}

/** A value of one sample in Prometheus text, summed over series matching every label given. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

describe("rate limit, health and metrics", () => {
  let infra: Infra;
  let s: Suite;
  beforeAll(async () => {
    // A Redis of this file's own, so stopping it disturbs no other test.
    const dir = join(inject("dataDir"), `redis-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    infra = await startInfra({ dataDir: dir, log: () => {}, env: { SVC_DATABASE_URL: inject("adminDatabaseUrl"), SVC_NATS_URL: inject("natsUrl") } });
    s = await startSuite({ env: { SVC_RATE_LIMIT: "20", SVC_REDIS_URL: infra.redisUrl } });
  });
  afterAll(async () => {
    await s?.stop();
    await infra?.stop();
  });

  const metrics = async () => {
    const res = await s.call("GET", "/metrics", { key: s.bootstrapKey });
    expect(res.status).toBe(200);
    return res.text();
  };

  it("answers health probes to anyone, without detail", async () => {
    for (const probe of ["live", "started", "ready"]) {
      const res = await s.call("GET", `/health/${probe}`);
      expect(res.status, probe).toBe(200);
      expect(await res.json()).toEqual({ status: "up" });
    }
    const deploy = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect(await (await s.call("GET", "/health/ready", { key: deploy.key })).json()).toEqual({ status: "up" });
  });

  it("shows an administrator each dependency", async () => {
    const body = (await (await s.call("GET", "/health/ready", { key: s.bootstrapKey })).json()) as { status: string; checks: Record<string, { status: string }> };
    expect(body.status).toBe("up");
    for (const dep of ["auth", "artifacts", "admin", "walker", "notifier", "postgres", "nats", "redis"]) expect(body.checks[dep], dep).toEqual({ status: "up" });
  });

  it("is not ready while an upstream is down, and says which to an administrator", async () => {
    await s.stopService("artifacts");
    try {
      const anon = await s.call("GET", "/health/ready");
      expect(anon.status).toBe(503);
      expect(await anon.json()).toEqual({ status: "down" });
      expect((await s.call("GET", "/health/live")).status).toBe(200);
      const admin = (await (await s.call("GET", "/health/ready", { key: s.bootstrapKey })).json()) as { checks: Record<string, { status: string; error?: string }> };
      expect(admin.checks.artifacts?.status).toBe("down");
      expect(admin.checks.auth?.status).toBe("up");
    } finally {
      await s.startService("artifacts");
    }
  });

  it("serves the deployment's meters in the Prometheus text format to manage:read over *", async () => {
    expect((await s.call("GET", "/metrics")).status).toBe(401);
    const deploy = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect((await s.call("GET", "/metrics", { key: deploy.key })).status).toBe(403);
    const res = await s.call("GET", "/metrics", { key: s.bootstrapKey });
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    const types = text.split("\n").filter((l) => l.startsWith("# TYPE "));
    expect(new Set(types.map((l) => l.split(" ")[2])).size).toBe(types.length);
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/);
    }
    for (const service of ["gateway", "auth", "artifacts", "admin", "walker", "notifier", "console"]) {
      expect(text, service).toMatch(new RegExp(`svc_http_requests_total\\{[^}]*service="${service}"`));
    }
    expect(sample(text, "svc_gateway_key_cache_hits_total")).toBeGreaterThan(0);
    expect(text).toContain("svc_http_request_duration_seconds_bucket");
  });

  it("answers /metrics and /api/logs with every node, call after call, once the heartbeats know them all", async () => {
    const nodesOf = (text: string) => new Set([...text.matchAll(/svc_http_requests_total\{[^}]*node="([^"]+)"/g)].map((m) => m[1]));
    // Admin learns which nodes exist from their heartbeats (one every 5 s; later on a busy machine).
    const all = nodesOf(await until(metrics, (text) => nodesOf(text).size === 7, 60_000));
    expect(all.size).toBe(7);
    for (let i = 0; i < 5; i++) {
      expect(nodesOf(await metrics())).toEqual(all);
      const res = await s.call("GET", "/api/logs?limit=1000", { key: s.bootstrapKey });
      expect(res.status).toBe(200);
      // A node whose answer was not waited for would leave no position in the cursor.
      const cursor = JSON.parse(Buffer.from(((await res.json()) as { next: string }).next, "base64url").toString()) as Record<string, number>;
      expect(new Set(Object.keys(cursor))).toEqual(all);
    }
  });

  it("is scraped by a real Prometheus with a manage:read key", async () => {
    const reader = await s.mint({ grants: [{ scope: "*", tokens: ["manage:read"] }] });
    const gateway = new URL(s.gatewayUrl);
    const prometheus = await startPrometheus(inject("prometheus"), join(inject("dataDir"), `prometheus-${process.pid}`), {
      target: gateway.host,
      metricsPath: "/metrics",
      bearerToken: reader.key,
    });
    try {
      type Vector = { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
      const query = (q: string) => prometheus.api<Vector>(`query?query=${encodeURIComponent(q)}`);
      // A scrape every second, each allowed one second: on a busy machine one may time out
      // (then `up` reads 0 until the next). Wait for a scrape that took samples and left the
      // target up, every reading taken after the same scrape.
      const latest = async () => {
        const targets = await prometheus.api<{ activeTargets: { health: string; lastError: string; lastScrape: string }[] }>("targets");
        const [scraped, up] = await Promise.all([query('scrape_samples_scraped{job="svc"}'), query('up{job="svc"}')]);
        const again = await prometheus.api<{ activeTargets: { lastScrape: string }[] }>("targets");
        return { targets, scraped, up, sameScrape: again.activeTargets[0]?.lastScrape === targets.activeTargets[0]?.lastScrape };
      };
      const seen = await until(latest, (v) => v.sameScrape && v.targets.activeTargets[0]?.health === "up" && Number(v.up.result[0]?.value[1]) === 1 && Number(v.scraped.result[0]?.value[1] ?? 0) > 0, 30_000);
      expect(seen.targets.activeTargets.map((t) => [t.health, t.lastError])).toEqual([["up", ""]]);
      expect(seen.up.result.map((r) => r.value[1])).toEqual(["1"]);
      expect(Number(seen.scraped.result[0]?.value[1])).toBeGreaterThan(0);
      // Every service's meters arrive under their own label.
      const services = await query('count by (service) (svc_http_requests_total{job="svc"})');
      expect(services.result.map((r) => r.metric.service).sort()).toEqual(["admin", "artifacts", "auth", "console", "gateway", "notifier", "walker"]);
      const histogram = await query('svc_http_request_duration_seconds_bucket{job="svc",le="+Inf"}');
      expect(histogram.result.length).toBeGreaterThan(0);
    } finally {
      await prometheus.stop();
    }
  });

  it("refuses a tenant over its ceiling with 429 and Retry-After: 60, but never probes or scrapes", async () => {
    const before = sample(await metrics(), "svc_gateway_rate_limited_total");
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await s.call("GET", "/repository/default/none", { key: s.bootstrapKey });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.headers.get("retry-after")).toBe("60");
        expect(await res.text()).toMatch(/too many requests/);
      }
    }
    expect(statuses).toContain(429);
    expect(statuses.slice(0, 10).every((st) => st === 404)).toBe(true);
    expect((await s.call("GET", "/health/ready")).status).toBe(200);
    expect((await s.call("GET", "/health/live")).status).toBe(200);
    const after = await metrics();
    expect(sample(after, "svc_gateway_rate_limited_total")).toBeGreaterThan(before);
  });

  it("keeps keyless callers in a bucket of their own", async () => {
    const res = await s.call("GET", "/repository/default/none");
    expect(res.status).toBe(401);
  });

  it("takes a per-tenant override through the admin API", async () => {
    // Wait for the bucket to let one request through, then raise the ceiling.
    const put = await until(
      () => s.call("PUT", "/api/rate-limits/default", { key: s.bootstrapKey, body: { requestsPerMinute: 100000 } }),
      (r) => r.status !== 429,
      20_000,
    );
    expect(put.status).toBe(200);
    // The gateways hear of the override at once (announced over NATS); the bucket may still be empty for a moment.
    const listedRes = await until(() => s.call("GET", "/api/rate-limits", { key: s.bootstrapKey }), (r) => r.status === 200);
    const listed = (await listedRes.json()) as { default: number; tenants: { tenant: string; requestsPerMinute: number }[] };
    expect(listed).toEqual({ default: 20, tenants: [{ tenant: "default", requestsPerMinute: 100000 }] });
    const flowing = await until(
      async () => (await Promise.all(Array.from({ length: 20 }, () => s.call("GET", "/repository/default/none", { key: s.bootstrapKey })))).map((r) => r.status),
      (st) => st.every((x) => x === 404),
    );
    expect(flowing.every((x) => x === 404)).toBe(true);
    expect((await s.call("PUT", "/api/rate-limits/default", { key: s.bootstrapKey, body: { requestsPerMinute: -1 } })).status).toBe(400);
    expect((await s.call("PUT", "/api/rate-limits/Not_A_Tenant", { key: s.bootstrapKey, body: { requestsPerMinute: 5 } })).status).toBe(400);
  });

  it("keeps serving when Redis is unreachable, warns once, counts it and shows it in the posture", async () => {
    await infra.stopServer("redis");
    try {
      for (let i = 0; i < 5; i++) expect((await s.call("GET", "/repository/default/none", { key: s.bootstrapKey })).status).toBe(404);
      const warnings = s.output("gateway").filter((l) => l.includes("Redis is unreachable"));
      expect(warnings).toHaveLength(1);
      expect(sample(await metrics(), "svc_gateway_rate_limit_unenforced_total")).toBeGreaterThanOrEqual(5);
      const posture = await until(
        async () => (await (await s.call("GET", "/api/posture", { key: s.bootstrapKey })).json()) as { advisories: { name: string }[] },
        (p) => p.advisories.some((a) => a.name === "svc.ratelimit.degraded"),
      );
      expect(posture.advisories.map((a) => a.name)).toContain("svc.ratelimit.degraded");
      const ready = (await (await s.call("GET", "/health/ready", { key: s.bootstrapKey })).json()) as { checks: Record<string, { status: string }> };
      expect(ready.checks.redis?.status).toBe("down");
    } finally {
      await infra.startServer("redis");
    }
    await until(
      async () => (await (await s.call("GET", "/api/posture", { key: s.bootstrapKey })).json()) as { advisories: { name: string }[] },
      (p) => !p.advisories.some((a) => a.name === "svc.ratelimit.degraded"),
      20_000,
    );
  });
});

describe("a burst of requests at once", () => {
  let s: Suite;
  beforeAll(async () => {
    // 10 a minute: a bucket of 10, refilled one every 6 s.
    s = await startSuite({ env: { SVC_RATE_LIMIT: "10" } });
  });
  afterAll(() => s?.stop());

  it("lets exactly a bucket's worth through and refuses the rest, however many arrive together", async () => {
    // Requests Redis did not decide in time are let through unchecked (fail open), and counted:
    // scrapes are never limited, so reading the count takes nothing from the bucket.
    const unenforced = async () => {
      const res = await s.call("GET", "/metrics", { key: s.bootstrapKey });
      expect(res.status).toBe(200);
      return sample(await res.text(), "svc_gateway_rate_limit_unenforced_total");
    };
    const unenforcedBefore = await unenforced();
    // The bucket refills one every 6 s: a burst that takes longer (a busy machine) may rightly
    // get one more through for each 6 s it took, measured around the whole burst; never more.
    const started = Date.now();
    const statuses = await Promise.all(Array.from({ length: 40 }, () => s.call("GET", "/repository/default/none", { key: s.bootstrapKey }).then((r) => r.status)));
    const refills = Math.floor((Date.now() - started) / 6000);
    const unchecked = (await unenforced()) - unenforcedBefore;
    const through = statuses.filter((st) => st === 404).length;
    expect(through).toBeGreaterThanOrEqual(10);
    expect(through, `${refills} refill(s) in the time the burst took, ${unchecked} request(s) not checked`).toBeLessThanOrEqual(10 + refills + unchecked);
    expect(statuses.filter((st) => st === 429)).toHaveLength(40 - through);
  });
});

describe("requests one after another", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_RATE_LIMIT: "10" } });
  });
  afterAll(() => s?.stop());

  it("lets no more than the bucket through, though they go without waiting for Redis while it has room", async () => {
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 16; i++) statuses.push((await s.call("GET", "/repository/default/none", { key: s.bootstrapKey })).status);
    // One refill every 6 s: a slow run may rightly get one more through for each 6 s it took.
    const refills = Math.floor((Date.now() - started) / 6000);
    const through = statuses.filter((st) => st === 404).length;
    expect(through).toBeGreaterThanOrEqual(10);
    expect(through, `${refills} refill(s) in the time the run took`).toBeLessThanOrEqual(10 + refills);
    expect(statuses.slice(0, 10).every((st) => st === 404)).toBe(true);
    expect(statuses.filter((st) => st === 429)).toHaveLength(16 - through);
  });
});

describe("a deployment without a rate limit", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_RATE_LIMIT: "0" } });
  });
  afterAll(() => s?.stop());

  it("never answers 429", async () => {
    const statuses = await Promise.all(Array.from({ length: 50 }, () => s.call("GET", "/repository/default/none", { key: s.bootstrapKey }).then((r) => r.status)));
    expect(statuses.every((st) => st === 404)).toBe(true);
  });
});
