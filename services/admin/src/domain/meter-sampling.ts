import type { Logger } from "pino";

/**
 * The deployment's meters sampled into Postgres for the console's charts, so the last day of
 * requests, errors, latency and storage is kept by the suite itself, without Prometheus. A
 * sample keeps each gateway node's cumulative counters as they stood (not a difference): which
 * admin node took the previous sample, or whether any did, does not matter; the differences
 * are taken when the series is read, per node, so a restarted node (its counters back at 0) or
 * a node that appeared counts only what it answered since.
 */

/** One gateway node's cumulative counters at a sampling. */
export interface NodeReading {
  /** Requests answered (health probes left out), and those answered 5xx. */
  requests: number;
  errors: number;
  /** Sum and count of the request durations (seconds), for the mean latency. */
  durationSum: number;
  durationCount: number;
  /**
   * The request-duration histogram: cumulative counts by upper bound in seconds (`le`, "+Inf"
   * among them), for the 95th percentile. Absent in samples taken before it was kept.
   */
  buckets?: Record<string, number>;
  /** When the process started (ms since the epoch), to tell a restart or a new node apart from a missed sampling. */
  started: number;
}

export interface Reading {
  nodes: Record<string, NodeReading>;
  /** Bytes every repository's index holds; null when no artifacts node reported them. */
  storageBytes: number | null;
}

export interface Sample extends Reading {
  slot: Date;
  takenAt: Date;
}

interface MeterValue {
  value: number;
  labels?: Record<string, string | number>;
  metricName?: string;
}
interface Meter {
  name?: string;
  values?: MeterValue[];
}

const REQUESTS = "svc_http_requests_total";
const DURATION = "svc_http_request_duration_seconds";
const START = "svc_process_process_start_time_seconds";
const USED = "svc_repository_used_bytes";

/** What a sample keeps of every process's meters (prom-client JSON, one array per process). */
export function readingOf(perProcess: unknown[][]): Reading {
  const nodes: Record<string, NodeReading> = {};
  const used = new Map<string, number>();
  const gatewayNode = (labels: MeterValue["labels"]) => (labels?.service === "gateway" && typeof labels.node === "string" ? labels.node : undefined);
  const of = (node: string) => (nodes[node] ??= { requests: 0, errors: 0, durationSum: 0, durationCount: 0, buckets: {}, started: 0 });
  for (const meters of perProcess) {
    if (!Array.isArray(meters)) continue;
    for (const m of meters as Meter[]) {
      for (const v of Array.isArray(m?.values) ? m.values : []) {
        if (typeof v?.value !== "number" || !Number.isFinite(v.value)) continue;
        const node = gatewayNode(v.labels);
        const route = String(v.labels?.route ?? "");
        if (m.name === USED && typeof v.labels?.repository === "string") {
          // Every artifacts node reports the same figures from Postgres: one per repository.
          used.set(v.labels.repository, Math.max(used.get(v.labels.repository) ?? 0, v.value));
        }
        if (!node) continue;
        if (m.name === START) of(node).started = v.value * 1000;
        // Orchestrators' probes are not the traffic people ask about.
        if (route.startsWith("/health")) continue;
        if (m.name === REQUESTS) {
          of(node).requests += v.value;
          if (Number(v.labels?.status) >= 500) of(node).errors += v.value;
        } else if (m.name === DURATION && v.metricName === `${DURATION}_sum`) of(node).durationSum += v.value;
        else if (m.name === DURATION && v.metricName === `${DURATION}_count`) of(node).durationCount += v.value;
        else if (m.name === DURATION && v.metricName === `${DURATION}_bucket` && v.labels?.le !== undefined) {
          const buckets = (of(node).buckets ??= {});
          const le = String(v.labels.le);
          buckets[le] = (buckets[le] ?? 0) + v.value;
        }
      }
    }
  }
  const anyArtifacts = perProcess.some((meters) => Array.isArray(meters) && (meters as Meter[]).some((m) => m?.name === USED));
  return { nodes, storageBytes: anyArtifacts ? [...used.values()].reduce((a, b) => a + b, 0) : null };
}

/** Adds `b`'s counts (times `sign`) into `into`, bound by bound. */
function addBuckets(into: Map<string, number>, b: Record<string, number> | undefined, sign = 1): void {
  for (const [le, n] of Object.entries(b ?? {})) into.set(le, (into.get(le) ?? 0) + sign * n);
}

/**
 * The q-quantile of a cumulative histogram (bounds in seconds), in milliseconds, as Prometheus's
 * histogram_quantile estimates it: linear within the bucket the rank falls in; the highest finite
 * bound when it falls in +Inf's. Null without requests.
 */
export function quantileMs(q: number, buckets: ReadonlyMap<string, number>): number | null {
  const bounds = [...buckets.entries()].map(([le, n]) => ({ le: le === "+Inf" ? Infinity : Number(le), n })).filter((b) => !Number.isNaN(b.le)).sort((a, b) => a.le - b.le);
  const total = bounds.at(-1)?.n ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lower = { le: 0, n: 0 };
  for (const b of bounds) {
    if (b.n >= rank) {
      if (b.le === Infinity) return Math.round(lower.le * 1_000_000) / 1000;
      const within = b.n > lower.n ? (rank - lower.n) / (b.n - lower.n) : 1;
      return Math.round((lower.le + (b.le - lower.le) * within) * 1_000_000) / 1000;
    }
    lower = b;
  }
  return Math.round(lower.le * 1_000_000) / 1000;
}

/** What one sample adds over the one before it: per node, what its counters grew by. */
function growth(prev: Sample | undefined, cur: Sample, intervalMs: number) {
  let requests = 0;
  let errors = 0;
  let durationSum = 0;
  let durationCount = 0;
  const buckets = new Map<string, number>();
  // Without a previous sample, what a node counted before the last interval is not this interval's.
  const since = prev ? prev.takenAt.getTime() : cur.takenAt.getTime() - intervalMs;
  for (const [node, c] of Object.entries(cur.nodes)) {
    const p = prev?.nodes[node];
    const restarted = p === undefined || c.requests < p.requests || c.started > p.started;
    if (!restarted) {
      requests += c.requests - p.requests;
      errors += c.errors - p.errors;
      durationSum += c.durationSum - p.durationSum;
      durationCount += c.durationCount - p.durationCount;
      // A sample from before the histogram was kept gives no baseline for it.
      if (c.buckets && p.buckets) {
        addBuckets(buckets, c.buckets);
        addBuckets(buckets, p.buckets, -1);
      }
    } else if (c.started >= since) {
      // Started since the previous sample: everything it counted is new.
      requests += c.requests;
      errors += c.errors;
      durationSum += c.durationSum;
      durationCount += c.durationCount;
      addBuckets(buckets, c.buckets);
    }
    // Otherwise the previous sample missed the node: its baseline is unknown, so nothing is counted.
  }
  return { requests, errors, durationSum, durationCount, buckets };
}

export interface SeriesPoint {
  /** The start of the point's span (ISO-8601). */
  time: string;
  requests: number;
  errors: number;
  /** Mean time to answer a request in the span, in milliseconds; null when none was answered. */
  latencyMs: number | null;
  /** The 95th percentile of the times to answer (estimated from the histogram's buckets), in milliseconds; null when none was answered. */
  p95Ms: number | null;
  /** The storage at the last sample of the span; null when no sample of it knew. */
  storageBytes: number | null;
}

export interface Series {
  from: string;
  to: string;
  stepSeconds: number;
  points: SeriesPoint[];
  totals: { requests: number; errors: number };
}

/**
 * The samples' growth in spans of `stepMs` from `from` to `to`: a span without a sample is left
 * out (no point: the chart shows the gap), so nothing is made up for the time nobody sampled.
 * `samples` is in slot order and may start before `from` (the one before is the baseline).
 */
export function seriesOf(samples: Sample[], opts: { from: number; to: number; stepMs: number; intervalMs: number }): Series {
  const spans = new Map<number, { requests: number; errors: number; durationSum: number; durationCount: number; buckets: Map<string, number>; storage: number | null }>();
  let prev: Sample | undefined;
  for (const s of samples) {
    const t = s.slot.getTime();
    if (t >= opts.from && t < opts.to) {
      const g = growth(prev, s, opts.intervalMs);
      const key = opts.from + Math.floor((t - opts.from) / opts.stepMs) * opts.stepMs;
      const span = spans.get(key) ?? { requests: 0, errors: 0, durationSum: 0, durationCount: 0, buckets: new Map<string, number>(), storage: null };
      span.requests += g.requests;
      span.errors += g.errors;
      span.durationSum += g.durationSum;
      span.durationCount += g.durationCount;
      for (const [le, n] of g.buckets) span.buckets.set(le, (span.buckets.get(le) ?? 0) + n);
      if (s.storageBytes !== null) span.storage = s.storageBytes;
      spans.set(key, span);
    }
    prev = s;
  }
  const points = [...spans.entries()]
    .sort(([a], [b]) => a - b)
    .map(([key, s]) => ({
      time: new Date(key).toISOString(),
      requests: s.requests,
      errors: s.errors,
      // To the microsecond: what the seconds' float sums carry beyond it is noise.
      latencyMs: s.durationCount > 0 ? Math.round((s.durationSum / s.durationCount) * 1_000_000) / 1000 : null,
      p95Ms: quantileMs(0.95, s.buckets),
      storageBytes: s.storage,
    }));
  return {
    from: new Date(opts.from).toISOString(),
    to: new Date(opts.to).toISOString(),
    stepSeconds: opts.stepMs / 1000,
    points,
    totals: { requests: points.reduce((a, p) => a + p.requests, 0), errors: points.reduce((a, p) => a + p.errors, 0) },
  };
}

/** The sample store as the sampler uses it (store/meter-sample-store.ts). */
export interface SampleStore {
  /** Whether the slot was sampled already (by this node or another). */
  has(slot: Date): Promise<boolean>;
  /** Inserts the sample unless its slot has one; true when this one was kept. */
  add(sample: Sample): Promise<boolean>;
  /** Removes samples and recent publishes older than `before`. */
  prune(before: Date): Promise<void>;
}

/**
 * Takes a sample once per interval across every admin node: each node ticks on its own timer,
 * skips a slot another node sampled, and a race between two ends with the slot's one insert
 * winning (the slot is the key). Pruning follows each kept sample.
 */
export function meterSamplerFactory(deps: {
  store: SampleStore;
  /** Every process's meters (this one's and what the others answered over NATS). */
  gather: () => Promise<unknown[][]>;
  intervalMs: number;
  historyMs: number;
  now?: () => number;
  log?: Pick<Logger, "warn" | "debug">;
}) {
  const now = deps.now ?? Date.now;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<unknown> | undefined;
  const tick = async (): Promise<"taken" | "skipped"> => {
    const at = now();
    const slot = new Date(at - (at % deps.intervalMs));
    if (await deps.store.has(slot)) return "skipped";
    const reading = readingOf(await deps.gather());
    const kept = await deps.store.add({ slot, takenAt: new Date(at), ...reading });
    if (kept) await deps.store.prune(new Date(at - deps.historyMs));
    return kept ? "taken" : "skipped";
  };
  return {
    tick,
    /**
     * Samples early in every slot (a tenth of the interval in, so timer drift never
     * skips one) until stopped; a failed sampling is logged and the next slot tries again.
     */
    start(): void {
      const next = () => {
        if (stopped) return;
        const at = now();
        timer = setTimeout(run, deps.intervalMs - (at % deps.intervalMs) + Math.floor(deps.intervalMs / 10));
        timer.unref();
      };
      const run = () => {
        running = tick()
          .catch((err) => deps.log?.warn({ err }, "sampling the deployment's meters failed; the next interval tries again"))
          .finally(next);
      };
      // The first sample waits for the next slot: by then the heartbeats tell which nodes to wait for.
      next();
    },
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
export type MeterSampler = ReturnType<typeof meterSamplerFactory>;
