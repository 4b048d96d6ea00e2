import { describe, expect, it } from "vitest";
import { retryDelay } from "./backoff.js";

describe("retry pauses", () => {
  it("double with each retry, between half and all of base * 2^(n-1)", () => {
    expect([1, 2, 3, 4].map((n) => retryDelay(n, 1000, undefined, () => 0))).toEqual([500, 1000, 2000, 4000]);
    expect([1, 2, 3, 4].map((n) => retryDelay(n, 1000, undefined, () => 1))).toEqual([1000, 2000, 4000, 8000]);
  });

  it("always grow below the cap, whatever the jitter", () => {
    for (let n = 1; n < 10; n++) {
      const longestThis = retryDelay(n, 250, 1e9, () => 1);
      const shortestNext = retryDelay(n + 1, 250, 1e9, () => 0);
      expect(shortestNext).toBeGreaterThanOrEqual(longestThis);
    }
  });

  it("spread retries that fall due together", () => {
    const seen = new Set(Array.from({ length: 50 }, () => retryDelay(3, 1000)));
    expect(seen.size).toBeGreaterThan(10);
    for (const d of seen) expect(d >= 2000 && d <= 4000).toBe(true);
  });

  it("stop growing at the cap", () => {
    expect(retryDelay(40, 30_000, 3_600_000, () => 1)).toBe(3_600_000);
    expect(retryDelay(40, 30_000, 3_600_000, () => 0)).toBe(1_800_000);
    expect(retryDelay(5000, 30_000)).toBeLessThanOrEqual(3_600_000);
  });
});
