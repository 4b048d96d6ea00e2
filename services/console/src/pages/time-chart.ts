import { html, raw, type Html } from "./html.js";

/**
 * A small time-series chart as inline SVG, drawn on the server: no script, no style attribute
 * and nothing fetched (the console's Content-Security-Policy allows none), only presentation
 * attributes and the classes console.css styles. Its axes carry the range's ends, each point
 * is a circle with its own <title>, and the figure's caption and a table behind <details> are
 * its text alternative.
 */

export interface ChartPoint {
  /** Milliseconds since the epoch. */
  t: number;
  /** null: no value at this time (drawn as a gap). */
  v: number | null;
}

export interface ChartInput {
  /** Unique on the page: names the figure and its parts. */
  id: string;
  title: string;
  points: ChartPoint[];
  /** The time the x axis spans. */
  from: number;
  to: number;
  /** How a value reads (axis, titles, caption, table). */
  format: (v: number) => string;
  /** Points further apart than this are not joined by the line. */
  gapMs: number;
}

/** The drawing's size in SVG units (it scales to the figure's width). */
export const CHART = { width: 320, height: 120, left: 52, right: 8, top: 8, bottom: 22 } as const;

const round = (n: number) => Math.round(n * 10) / 10;
const clock = (t: number) => new Date(t).toISOString().slice(11, 16);
const stamp = (t: number) => new Date(t).toISOString().replace("T", " ").slice(0, 16);

/** Where each point with a value is drawn, in SVG units: time left to right, value bottom (0 or the least) to top. */
export function chartCoordinates(input: Pick<ChartInput, "points" | "from" | "to">): { x: number; y: number; point: ChartPoint & { v: number } }[] {
  const shown = input.points.filter((p): p is ChartPoint & { v: number } => p.v !== null && p.t >= input.from && p.t <= input.to);
  const { lo, hi } = valueRange(shown.map((p) => p.v));
  const w = CHART.width - CHART.left - CHART.right;
  const h = CHART.height - CHART.top - CHART.bottom;
  const span = Math.max(input.to - input.from, 1);
  return shown.map((p) => ({ x: round(CHART.left + ((p.t - input.from) / span) * w), y: round(CHART.top + h - ((p.v - lo) / (hi - lo)) * h), point: p }));
}

/** The y axis: from 0 (or the least value, when one is below 0) to the greatest, never an empty range. */
function valueRange(values: number[]): { lo: number; hi: number } {
  const lo = Math.min(0, ...values);
  const hi = Math.max(...values, lo);
  return { lo, hi: hi > lo ? hi : lo + 1 };
}

export function timeChart(input: ChartInput): Html {
  const coords = chartCoordinates(input);
  const values = coords.map((c) => c.point.v);
  const { lo, hi } = valueRange(values);
  const bottom = CHART.height - CHART.bottom;
  const right = CHART.width - CHART.right;
  // One path, broken where points are further apart than gapMs (nobody sampled in between).
  const line = coords.map((c, i) => `${i > 0 && c.point.t - coords[i - 1]!.point.t <= input.gapMs ? "L" : "M"}${c.x} ${c.y}`).join(" ");
  const latest = coords.at(-1)?.point;
  const summary =
    latest === undefined
      ? "No samples in this span yet."
      : `Latest ${input.format(latest.v)} at ${clock(latest.t)} UTC; least ${input.format(Math.min(...values))}, greatest ${input.format(Math.max(...values))} over ${coords.length} ${coords.length === 1 ? "point" : "points"}.`;
  return html`<figure class="chart" id="${input.id}">
<svg viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-labelledby="${input.id}-title ${input.id}-summary">
<title id="${input.id}-title">${input.title}</title>
<line class="axis" x1="${CHART.left}" y1="${bottom}" x2="${right}" y2="${bottom}"/>
<line class="axis" x1="${CHART.left}" y1="${CHART.top}" x2="${CHART.left}" y2="${bottom}"/>
<text class="tick" x="${CHART.left - 4}" y="${CHART.top + 8}" text-anchor="end">${input.format(hi)}</text>
<text class="tick" x="${CHART.left - 4}" y="${bottom}" text-anchor="end">${input.format(lo)}</text>
<text class="tick" x="${CHART.left}" y="${CHART.height - 6}" text-anchor="start">${clock(input.from)}</text>
<text class="tick" x="${right}" y="${CHART.height - 6}" text-anchor="end">${clock(input.to)} UTC</text>
${line ? html`<path class="line" d="${line}"/>` : ""}
${coords.map((c) => html`<circle class="point" cx="${c.x}" cy="${c.y}" r="2"><title>${stamp(c.point.t)} UTC: ${input.format(c.point.v)}</title></circle>`)}
</svg>
<figcaption><strong>${input.title}</strong> <span id="${input.id}-summary">${summary}</span></figcaption>
${coords.length > 0 ? html`<details><summary>The values</summary><table class="data"><caption>${input.title}</caption><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Value</th></tr></thead><tbody>${coords.map((c) => html`<tr><td>${stamp(c.point.t)}</td><td class="num">${input.format(c.point.v)}</td></tr>`)}</tbody></table></details>` : raw("")}
</figure>`;
}
