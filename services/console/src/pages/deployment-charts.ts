import { bytesText } from "@svc/contracts";
import { html, type Html } from "./html.js";
import { expectOk, type PageContext } from "./page-contract.js";
import { timeChart, type ChartPoint } from "./time-chart.js";

/** What GET /api/metrics/series answers (the admin service's samples of the deployment's meters). */
export interface Series {
  from: string;
  to: string;
  stepSeconds: number;
  points: { time: string; requests: number; errors: number; latencyMs: number | null; p95Ms?: number | null; storageBytes: number | null }[];
  totals: { requests: number; errors: number };
}

export type ChartWindow = "1h" | "24h";
export const chartWindowOf = (q: string | undefined): ChartWindow => (q === "24h" ? "24h" : "1h");

export async function readSeries(ctx: PageContext, window: ChartWindow): Promise<Series> {
  return expectOk(await ctx.api<Series>("GET", `/api/metrics/series?window=${window}`));
}

const count = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
const percent = (v: number) => `${v < 10 && !Number.isInteger(v) ? v.toFixed(1) : Math.round(v)} %`;
const millis = (v: number) => `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`;

/** The share of requests answered 5xx, in percent; null when there were none. */
export const errorShare = (requests: number, errors: number): number | null => (requests > 0 ? (errors / requests) * 100 : null);

/**
 * The charts of the deployment (request rate, error rate, mean and 95th-percentile latency, storage) over a window,
 * as the home page and the Metrics page show them; `id` prefixes their ids.
 */
export function deploymentCharts(series: Series, id: string): Html {
  const from = Date.parse(series.from);
  const to = Date.parse(series.to);
  const perMinute = series.stepSeconds / 60;
  const gapMs = series.stepSeconds * 1000 * 1.5;
  const pts = (v: (p: Series["points"][number]) => number | null): ChartPoint[] => series.points.map((p) => ({ t: Date.parse(p.time), v: v(p) }));
  const step = series.stepSeconds === 60 ? "minute" : `${series.stepSeconds / 60} minutes`;
  return html`<div class="charts">
${timeChart({ id: `${id}-requests`, title: "Requests per minute", points: pts((p) => p.requests / perMinute), from, to, format: count, gapMs })}
${timeChart({ id: `${id}-errors`, title: "Error rate (5xx answers)", points: pts((p) => errorShare(p.requests, p.errors)), from, to, format: percent, gapMs })}
${timeChart({ id: `${id}-latency`, title: "Mean latency", points: pts((p) => p.latencyMs), from, to, format: millis, gapMs })}
${timeChart({ id: `${id}-p95`, title: "Latency, 95th percentile", points: pts((p) => p.p95Ms ?? null), from, to, format: millis, gapMs })}
${timeChart({ id: `${id}-storage`, title: "Storage used", points: pts((p) => p.storageBytes), from, to, format: bytesText, gapMs })}
</div>
<p class="chart-note">One point per ${step}, from the gateways' requests (health probes left out) as the admin service samples them; a gap is a time nobody sampled.</p>`;
}

/** Links switching the charts between the last hour and the last day (a plain query parameter: no script). */
export function windowSwitch(base: string, current: ChartWindow, keep: Record<string, string | undefined> = {}): Html {
  const href = (w: ChartWindow) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(keep)) if (v) q.set(k, v);
    q.set("window", w);
    return `${base}?${q.toString()}`;
  };
  const link = (w: ChartWindow, label: string) => (w === current ? html`<strong aria-current="true">${label}</strong>` : html`<a href="${href(w)}">${label}</a>`);
  return html`<p class="window-switch">Show: ${link("1h", "the last hour")} · ${link("24h", "the last day")}</p>`;
}
