import { describe, expect, it } from "vitest";
import { staleHeaders, UpstreamHealth } from "./upstream-health.js";

describe("upstream health", () => {
  it("marks an upstream down after repeated failures and retries it with a growing backoff", () => {
    let t = 0;
    const h = new UpstreamHealth(() => t, 3, 1000, 4000);
    h.failed(); h.failed();
    expect(h.mayAsk()).toBe(true);
    h.failed();
    expect(h.down).toBe(true);
    expect(h.mayAsk()).toBe(false);
    t = 1000;
    expect(h.mayAsk()).toBe(true);
    h.failed();
    t = 2999;
    expect(h.mayAsk()).toBe(false);
    t = 3000;
    expect(h.mayAsk()).toBe(true);
    for (let i = 0; i < 10; i++) h.failed();
    t += 4000;
    expect(h.mayAsk()).toBe(true);
    h.succeeded();
    expect(h.down).toBe(false);
  });

  it("labels a stale copy with Warning 110 and its age in seconds", () => {
    expect(staleHeaders(1_000, 62_900)).toEqual({ Warning: '110 - "Response is Stale"', Age: "61" });
  });
});
