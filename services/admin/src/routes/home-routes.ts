import { Type } from "@sinclair/typebox";
import { Answer, Nullable, StringEnum, errorResponses, readLimit, type ServiceApp } from "@svc/kit";
import { seriesOf } from "../domain/meter-sampling.js";
import type { NodeRegistry } from "../domain/node-registry.js";
import type { MeterSampleStore } from "../store/meter-sample-store.js";

/** The spans a chart shows: the last hour by the minute, the last day by the quarter hour (never finer than the sampling). */
const WINDOWS = { "1h": { ms: 3_600_000, stepMs: 60_000 }, "24h": { ms: 86_400_000, stepMs: 900_000 } } as const;

const pointSchema = Answer({
  time: Type.String({ format: "date-time", description: "the start of the point's span" }),
  requests: Type.Integer({ description: "requests the gateways answered in the span (health probes left out)" }),
  errors: Type.Integer({ description: "of them, those answered with a 5xx status" }),
  latencyMs: Nullable(Type.Number({ description: "mean time to answer a request in the span, in milliseconds; null: none answered" })),
  p95Ms: Nullable(Type.Number({ description: "95th percentile of the times to answer in the span (estimated from the duration histogram's buckets, as Prometheus's histogram_quantile does), in milliseconds; null: none answered" })),
  storageBytes: Nullable(Type.Integer({ description: "bytes every repository's index held at the span's last sample; null: unknown" })),
});

export interface HomeRoutesDeps {
  samples: Pick<MeterSampleStore, "since" | "publishes">;
  nodes: Pick<NodeRegistry, "live">;
  intervalMs: number;
  now?: () => number;
}

/**
 * What the console's home page and Metrics page read: the sampled series, the recent publishes
 * and the nodes the heartbeats know. Every route needs manage:read on * (the gateway's rule for /api/).
 */
export function homeRoutes(app: ServiceApp, deps: HomeRoutesDeps): void {
  const now = deps.now ?? Date.now;

  app.get(
    "/api/metrics/series",
    {
      schema: {
        summary: "The deployment's requests, errors, latency and storage over the last hour or day, from the admin service's own samples (svc.metrics.sample-interval, kept for svc.metrics.history)",
        querystring: Type.Object({ window: Type.Optional(StringEnum(["1h", "24h"] as const, { description: "the span: 1h (by the minute, the default) or 24h (by the quarter hour)" })) }, { additionalProperties: false }),
        response: {
          200: Answer({
            from: Type.String({ format: "date-time" }),
            to: Type.String({ format: "date-time" }),
            stepSeconds: Type.Integer(),
            points: Type.Array(pointSchema, { description: "one per span that has a sample, oldest first; a span nobody sampled has none" }),
            totals: Answer({ requests: Type.Integer(), errors: Type.Integer() }),
          }),
          ...errorResponses(400),
        },
      },
    },
    async (req) => {
      const w = WINDOWS[req.query.window ?? "1h"];
      const stepMs = Math.max(w.stepMs, deps.intervalMs);
      const at = now();
      // Spans end on step boundaries, the current (unfinished) one included.
      const to = at - (at % stepMs) + stepMs;
      const from = to - Math.ceil(w.ms / stepMs) * stepMs;
      return seriesOf(await deps.samples.since(new Date(from)), { from, to, stepMs, intervalMs: deps.intervalMs });
    },
  );

  app.get(
    "/api/metrics/publishes",
    {
      schema: {
        summary: "The latest publishes the admin service heard of (artifact.published), newest first, kept for svc.metrics.history",
        querystring: Type.Object({ limit: Type.Optional(Type.String({ description: "at most this many, 1-500 (default 10)" })) }, { additionalProperties: false }),
        response: {
          200: Type.Array(Answer({ time: Type.String({ format: "date-time" }), repository: Type.String(), path: Type.String(), size: Type.Integer(), actor: Type.String({ description: "key:<id>, person:<id>, anonymous or system:<service>" }) })),
          ...errorResponses(400),
        },
      },
    },
    async (req) => (await deps.samples.publishes(req.query.limit === undefined ? 10 : readLimit(req.query.limit))).map((p) => ({ time: p.time.toISOString(), repository: p.repository, path: p.path, size: p.size, actor: p.actor })),
  );

  app.get(
    "/api/metrics/nodes",
    {
      schema: {
        summary: "The nodes heard from recently (their heartbeats), with what each reports about its dependencies",
        response: {
          200: Type.Array(
            Answer({
              node: Type.String(),
              service: Type.String(),
              started: Type.String({ format: "date-time" }),
              lastHeard: Type.String({ format: "date-time" }),
              status: Type.Record(Type.String(), Type.String(), { description: "what the node reports, e.g. redis: down; empty when all is well" }),
            }),
          ),
          ...errorResponses(),
        },
      },
    },
    async () =>
      deps.nodes
        .live()
        .map((hb) => ({ node: hb.node, service: hb.service, started: hb.started, lastHeard: hb.at, status: hb.status ?? {} }))
        .sort((a, b) => (a.service === b.service ? (a.node < b.node ? -1 : 1) : a.service < b.service ? -1 : 1)),
  );
}
