import { describe, expect, it } from "vitest";
import { aggregateMetrics, createMetrics } from "./metrics.js";

const LAG = "svc_process_nodejs_eventloop_lag_";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every sample line of an exposition is a name, optional labels and a number Prometheus reads. */
const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/;

describe("a process's meters", () => {
  it("never shows the event-loop delay of an empty sampling window: scrapes close together repeat the last window's", async () => {
    const m = createMetrics("metrics-test");
    await sleep(350);
    const first = await m.snapshot();
    const mean = (s: typeof first) => s.find((x) => x.name === `${LAG}mean_seconds`)?.values[0]?.value;
    const min = (s: typeof first) => s.find((x) => x.name === `${LAG}min_seconds`)?.values[0]?.value;
    expect(Number.isFinite(mean(first))).toBe(true);
    expect(min(first)).toBeLessThan(1);

    // At once, and again: prom-client's histogram was reset by the first and holds no sample yet.
    for (let i = 0; i < 3; i++) {
      const again = await m.snapshot();
      expect(mean(again)).toBe(mean(first));
      expect(min(again)).toBe(min(first));
      const text = await aggregateMetrics([again as unknown[]]);
      for (const line of text.split("\n")) if (line !== "" && !line.startsWith("#")) expect(line).toMatch(SAMPLE);
      expect(text).not.toMatch(/ (Nan|null)$/m);
    }

    // Once the window has samples again, they are the ones shown.
    await sleep(350);
    expect(Number.isFinite(mean(await m.snapshot()))).toBe(true);
  });

  it("leaves the window's gauges out until a window has had samples", async () => {
    const m = createMetrics("metrics-test-fresh");
    // Collected before the first sample: the plain lag (measured afresh every time), no window.
    const names = (await m.snapshot()).map((x) => x.name);
    expect(names).toContain(`${LAG}seconds`);
    expect(names.filter((n) => n.startsWith(LAG) && n !== `${LAG}seconds`)).toEqual([]);
  });
});
