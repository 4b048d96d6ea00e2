import { describe, expect, it } from "vitest";
import { meterSamplerFactory, readingOf, seriesOf, type NodeReading, type Sample, type SampleStore } from "./meter-sampling.js";

/** A gateway process's meters as prom-client JSON, as a gathering answers them. */
function gatewayMeters(node: string, o: { ok: number; failed?: number; probes?: number; durationSum: number; startedSeconds: number }) {
  const labels = (extra: Record<string, string | number>) => ({ ...extra, service: "gateway", node });
  return [
    { name: "svc_process_process_start_time_seconds", type: "gauge", values: [{ value: o.startedSeconds, labels: labels({}) }] },
    {
      name: "svc_http_requests_total",
      type: "counter",
      values: [
        { value: o.ok, labels: labels({ route: "/repository/*", method: "GET", status: "200" }) },
        { value: o.failed ?? 0, labels: labels({ route: "/repository/*", method: "GET", status: "502" }) },
        { value: o.probes ?? 0, labels: labels({ route: "/health/live", method: "GET", status: "200" }) },
      ],
    },
    {
      name: "svc_http_request_duration_seconds",
      type: "histogram",
      values: [
        { value: o.ok, metricName: "svc_http_request_duration_seconds_bucket", labels: labels({ le: 0.1, route: "/repository/*", method: "GET" }) },
        { value: o.ok + (o.failed ?? 0), metricName: "svc_http_request_duration_seconds_bucket", labels: labels({ le: "+Inf", route: "/repository/*", method: "GET" }) },
        { value: 5, metricName: "svc_http_request_duration_seconds_bucket", labels: labels({ le: 0.1, route: "/health/live", method: "GET" }) },
        { value: o.durationSum, metricName: "svc_http_request_duration_seconds_sum", labels: labels({ route: "/repository/*", method: "GET" }) },
        { value: o.ok + (o.failed ?? 0), metricName: "svc_http_request_duration_seconds_count", labels: labels({ route: "/repository/*", method: "GET" }) },
        { value: 5, metricName: "svc_http_request_duration_seconds_count", labels: labels({ route: "/health/live", method: "GET" }) },
      ],
    },
  ];
}
const artifactsMeters = (node: string, used: Record<string, number>) => [
  { name: "svc_repository_used_bytes", type: "gauge", values: Object.entries(used).map(([repository, value]) => ({ value, labels: { repository, service: "artifacts", node } })) },
  { name: "svc_http_requests_total", type: "counter", values: [{ value: 99, labels: { route: "/api/repositories", method: "GET", status: "500", service: "artifacts", node } }] },
];

const node = (requests: number, errors: number, durationSum: number, durationCount: number, started = 0): NodeReading => ({ requests, errors, durationSum, durationCount, started });
const T0 = Date.parse("2026-11-29T12:00:00Z");
const MIN = 60_000;
const sample = (minute: number, nodes: Record<string, NodeReading>, storageBytes: number | null = null): Sample => ({
  slot: new Date(T0 + minute * MIN),
  takenAt: new Date(T0 + minute * MIN + 6_000),
  nodes,
  storageBytes,
});

describe("a reading of the deployment's meters", () => {
  it("keeps each gateway node's requests, 5xx answers and durations, without health probes or other services' requests", () => {
    const r = readingOf([gatewayMeters("gateway@a", { ok: 40, failed: 2, probes: 7, durationSum: 1.5, startedSeconds: 1000 }), artifactsMeters("artifacts@b", { default: 300 })]);
    expect(r.nodes).toEqual({ "gateway@a": { requests: 42, errors: 2, durationSum: 1.5, durationCount: 42, buckets: { "0.1": 40, "+Inf": 42 }, started: 1_000_000 } });
  });

  it("counts a repository's used bytes once however many artifacts nodes report it, and knows no storage without one", () => {
    const both = readingOf([artifactsMeters("artifacts@b", { default: 300, libs: 20 }), artifactsMeters("artifacts@c", { default: 300, libs: 20 })]);
    expect(both.storageBytes).toBe(320);
    expect(readingOf([gatewayMeters("gateway@a", { ok: 1, durationSum: 0, startedSeconds: 1 })]).storageBytes).toBeNull();
  });

  it("sets aside what does not have the shape of prom-client's meters", () => {
    expect(readingOf([[null, { name: "svc_http_requests_total", values: [{ value: "x" }] }], "nope" as never]).nodes).toEqual({});
  });
});

describe("a series from the samples", () => {
  const opts = { from: T0 + MIN, to: T0 + 4 * MIN, stepMs: MIN, intervalMs: MIN };

  it("gives each minute what the counters grew by since the sample before, with the mean latency and the storage", () => {
    const s = seriesOf(
      [sample(0, { g: node(10, 0, 1, 10) }, 100), sample(1, { g: node(30, 1, 3, 30) }, 150), sample(2, { g: node(30, 1, 3, 30) }, 150), sample(3, { g: node(70, 5, 5, 70) }, 400)],
      opts,
    );
    expect(s.points).toEqual([
      { time: "2026-11-29T12:01:00.000Z", requests: 20, errors: 1, latencyMs: 100, p95Ms: null, storageBytes: 150 },
      { time: "2026-11-29T12:02:00.000Z", requests: 0, errors: 0, latencyMs: null, p95Ms: null, storageBytes: 150 },
      { time: "2026-11-29T12:03:00.000Z", requests: 40, errors: 4, latencyMs: 50, p95Ms: null, storageBytes: 400 },
    ]);
    expect(s.totals).toEqual({ requests: 60, errors: 5 });
    expect(s.stepSeconds).toBe(60);
  });

  it("adds up the nodes, counts a restarted node from zero and nothing for a node the sample before missed", () => {
    const started = T0 + 90_000;
    const s = seriesOf(
      [
        sample(1, { a: node(100, 0, 10, 100), b: node(50, 0, 5, 50) }),
        // a restarted after the previous sample (counters back near 0); c was running but not in the previous sample.
        sample(2, { a: node(7, 0, 0.7, 7, started), b: node(60, 0, 6, 60), c: node(500, 0, 50, 500) }),
      ],
      opts,
    );
    // The first sample has no baseline: its nodes were running before it, so it counts nothing.
    expect(s.points).toEqual([
      { time: "2026-11-29T12:01:00.000Z", requests: 0, errors: 0, latencyMs: null, p95Ms: null, storageBytes: null },
      { time: "2026-11-29T12:02:00.000Z", requests: 17, errors: 0, latencyMs: 100, p95Ms: null, storageBytes: null },
    ]);
  });

  it("gives each minute the 95th percentile of its requests' times from the histogram's growth, and none from a sample without buckets", () => {
    const withBuckets = (requests: number, buckets: Record<string, number>): NodeReading => ({ ...node(requests, 0, requests * 0.01, requests), buckets });
    const s = seriesOf(
      [
        sample(0, { g: withBuckets(100, { "0.01": 100, "0.1": 100, "1": 100, "+Inf": 100 }) }),
        // 100 more: 80 under 10 ms, 20 between 100 ms and 1 s, so the 95th falls in (0.1, 1]: 0.1 + 0.9 * (95 - 80) / 20.
        sample(1, { g: withBuckets(200, { "0.01": 180, "0.1": 180, "1": 200, "+Inf": 200 }) }),
        // 10 more, each slower than the highest bound: the highest finite bound is all that is known.
        sample(2, { g: withBuckets(210, { "0.01": 180, "0.1": 180, "1": 200, "+Inf": 210 }) }),
        // A node whose previous sample has no histogram: its requests count, its percentile is unknown.
        sample(3, { g: node(250, 0, 2.5, 250) }),
      ],
      opts,
    );
    expect(s.points.map((p) => [p.requests, p.p95Ms])).toEqual([
      [100, 775],
      [10, 1000],
      [40, null],
    ]);
  });

  it("leaves out minutes nobody sampled and samples outside the window, and sums a span's samples", () => {
    const s = seriesOf([sample(0, { g: node(0, 0, 0, 0) }), sample(1, { g: node(5, 0, 0.5, 5) }), sample(3, { g: node(9, 0, 0.9, 9) }), sample(5, { g: node(20, 0, 2, 20) })], { ...opts, stepMs: 2 * MIN });
    expect(s.points.map((p) => [p.time, p.requests])).toEqual([
      ["2026-11-29T12:01:00.000Z", 5],
      ["2026-11-29T12:03:00.000Z", 4],
    ]);
  });
});

/** The sample store's contract over a map: has, insert-unless-present, prune. */
function memoryStore(): SampleStore & { rows: Map<number, Sample> } {
  const rows = new Map<number, Sample>();
  return {
    rows,
    async has(slot) {
      return rows.has(slot.getTime());
    },
    async add(s) {
      if (rows.has(s.slot.getTime())) return false;
      rows.set(s.slot.getTime(), s);
      return true;
    },
    async prune(before) {
      for (const k of rows.keys()) if (k < before.getTime()) rows.delete(k);
    },
  };
}

describe("the sampler", () => {
  it("samples a slot once, keyed by the interval, and prunes what is older than the history", async () => {
    let clock = T0 + 6_000;
    let gathered = 0;
    const store = memoryStore();
    const sampler = meterSamplerFactory({
      store,
      gather: async () => {
        gathered++;
        return [gatewayMeters("gateway@a", { ok: gathered * 10, durationSum: 1, startedSeconds: 1 })];
      },
      intervalMs: MIN,
      historyMs: 3 * MIN,
      now: () => clock,
    });
    expect(await sampler.tick()).toBe("taken");
    clock += 30_000;
    expect(await sampler.tick()).toBe("skipped");
    expect(gathered).toBe(1);
    for (let i = 0; i < 4; i++) {
      clock += MIN;
      expect(await sampler.tick()).toBe("taken");
    }
    expect([...store.rows.keys()].map((k) => (k - T0) / MIN)).toEqual([2, 3, 4]);
    expect(store.rows.get(T0 + 4 * MIN)?.nodes["gateway@a"]?.requests).toBe(50);
  });

  it("of two nodes ticking in the same slot, keeps one sample", async () => {
    const store = memoryStore();
    const make = () => meterSamplerFactory({ store, gather: async () => [], intervalMs: MIN, historyMs: 60 * MIN, now: () => T0 + 6_000 });
    const outcomes = await Promise.all([make().tick(), make().tick()]);
    expect(outcomes.filter((o) => o === "taken")).toHaveLength(1);
    expect(store.rows.size).toBe(1);
  });
});
