import { hostname } from "node:os";
import type { FastifyInstance } from "fastify";
import { AggregatorRegistry, Counter, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from "prom-client";

/** One prom-client registry per process, labelled with the service and the node. */
export interface ServiceMetrics {
  registry: Registry;
  node: string;
  service: string;
  httpRequests: Counter<"route" | "method" | "status">;
  httpDuration: Histogram<"route" | "method">;
  /** The registry's meters as prom-client JSON, what a scrape of this process shows (see `snapshotOf`). */
  snapshot: () => Promise<MetricObjectWithValues<MetricValue<string>>[]>;
}

/**
 * prom-client's event-loop delay gauges: read from a delay histogram that it resets at every
 * collection, so a collection within one sampling interval of the previous one finds it empty
 * (mean NaN, min 9.2e9 s, max 0). The plain `..._lag_seconds` is measured afresh each time.
 */
const LAG_WINDOW = /^svc_process_nodejs_eventloop_lag_(min|max|mean|stddev|p50|p90|p99)_seconds$/;
const LAG_MEAN = "svc_process_nodejs_eventloop_lag_mean_seconds";

/**
 * The registry's meters, with the event-loop delay of the last window that had samples when
 * the current one has none (two scrapes close together, or two gatherings), and without it
 * before the first: never the values of an empty histogram.
 */
export function snapshotOf(registry: Registry): ServiceMetrics["snapshot"] {
  const lastLag = new Map<string, MetricValue<string>[]>();
  return async () => {
    const metrics = await registry.getMetricsAsJSON();
    const mean = metrics.find((x) => x.name === LAG_MEAN);
    const empty = mean !== undefined && mean.values.some((v) => !Number.isFinite(v.value));
    return metrics.flatMap((metric) => {
      if (!LAG_WINDOW.test(metric.name)) return [metric];
      if (!empty) {
        lastLag.set(metric.name, metric.values);
        return [metric];
      }
      const last = lastLag.get(metric.name);
      return last ? [{ ...metric, values: last }] : [];
    });
  };
}

export function nodeName(service: string): string {
  return `${service}@${hostname()}:${process.pid}`;
}

export function createMetrics(service: string): ServiceMetrics {
  const registry = new Registry();
  const node = nodeName(service);
  registry.setDefaultLabels({ service, node });
  // The event-loop delay is sampled every 100 ms, not every 10 ms (prom-client's default): the
  // sampling timer woke every process a hundred times a second, idle or not, which on a small VM
  // cost each idle service about 4 ms of CPU a second and added a wake-up between a sequential
  // client's requests. A blocked loop still shows in the delay histogram (the next sample is late).
  // A scrape within 100 ms of the last then finds no sample: `snapshot` keeps the last window's.
  collectDefaultMetrics({ register: registry, prefix: "svc_process_", eventLoopMonitoringPrecision: 100 });
  const httpRequests = new Counter({
    name: "svc_http_requests_total",
    help: "HTTP requests answered, by route pattern, method and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: "svc_http_request_duration_seconds",
    help: "Time to answer an HTTP request, by route pattern and method",
    labelNames: ["route", "method"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  return { registry, node, service, httpRequests, httpDuration, snapshot: snapshotOf(registry) };
}

/** Counts and times every request by its route pattern (bounded label values). */
export function instrumentHttp(app: FastifyInstance, m: ServiceMetrics): void {
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? "unmatched";
    const method = request.method;
    m.httpRequests.inc({ route, method, status: String(reply.statusCode) });
    m.httpDuration.observe({ route, method }, reply.elapsedTime / 1000);
    done();
  });
}

/** Merges the meters of many processes into one Prometheus text exposition. */
export async function aggregateMetrics(perProcess: unknown[][]): Promise<string> {
  if (perProcess.length === 0) return "";
  const merged = AggregatorRegistry.aggregate(perProcess as never);
  return merged.metrics();
}
