import { describe, expect, it } from "vitest";
import { CHART, chartCoordinates, timeChart } from "./time-chart.js";

const T0 = Date.parse("2026-11-29T12:00:00Z");
const MIN = 60_000;
const input = {
  id: "req",
  title: "Requests per minute",
  from: T0,
  to: T0 + 10 * MIN,
  format: (v: number) => `${v} req`,
  gapMs: 1.5 * MIN,
  points: [
    { t: T0, v: 0 },
    { t: T0 + MIN, v: 50 },
    { t: T0 + 2 * MIN, v: 100 },
    { t: T0 + 5 * MIN, v: 25 },
    { t: T0 + 6 * MIN, v: null },
  ],
};
const plot = { left: CHART.left, right: CHART.width - CHART.right, top: CHART.top, bottom: CHART.height - CHART.bottom };

describe("a time chart", () => {
  it("places each sample by its time across and its value up, from 0 to the greatest", () => {
    const c = chartCoordinates(input);
    const w = plot.right - plot.left;
    expect(c.map((p) => [p.x, p.y])).toEqual([
      [plot.left, plot.bottom],
      [plot.left + w / 10, (plot.top + plot.bottom) / 2],
      [plot.left + (2 * w) / 10, plot.top],
      [plot.left + w / 2, plot.bottom - (plot.bottom - plot.top) / 4],
    ]);
  });

  it("draws a circle per point, a line broken where nobody sampled, and labelled axes", () => {
    const svg = timeChart(input).text;
    expect(svg.match(/<circle class="point"/g)).toHaveLength(4);
    expect(svg).toContain(`<path class="line" d="M${plot.left} ${plot.bottom} L${plot.left + 26} 53 L${plot.left + 52} ${plot.top} M${plot.left + 130} 75.5"/>`);
    expect(svg).toMatch(/<text class="tick"[^>]*>100 req<\/text>/);
    expect(svg).toMatch(/<text class="tick"[^>]*>0 req<\/text>/);
    expect(svg).toMatch(/<text class="tick"[^>]*>12:00<\/text>/);
    expect(svg).toMatch(/<text class="tick"[^>]*>12:10 UTC<\/text>/);
    expect(svg).toContain("<title>2026-11-29 12:02 UTC: 100 req</title>");
  });

  it("has a text alternative: a caption with the latest, least and greatest values, and the values as a table", () => {
    const svg = timeChart(input).text;
    expect(svg).toContain('role="img" aria-labelledby="req-title req-summary"');
    expect(svg).toContain('<span id="req-summary">Latest 25 req at 12:05 UTC; least 0 req, greatest 100 req over 4 points.</span>');
    expect(svg).toMatch(/<details><summary>The values<\/summary><table[\s\S]*<td>2026-11-29 12:05<\/td><td class="num">25 req<\/td>/);
  });

  it("says so when there is no sample yet, with an axis all the same", () => {
    const svg = timeChart({ ...input, points: [] }).text;
    expect(svg).toContain("No samples in this span yet.");
    expect(svg).not.toContain("<circle");
    expect(svg).not.toContain("<details>");
    expect(svg).toContain('<line class="axis"');
  });

  it("escapes what it is given and carries no script or style attribute (the Content-Security-Policy allows neither)", () => {
    const svg = timeChart({ ...input, title: "<b>x</b>", format: (v) => `${v} "q"` }).text;
    expect(svg).toContain("&lt;b&gt;x&lt;/b&gt;");
    expect(svg).not.toMatch(/<script|style=|\son[a-z]+=/);
  });
});
