import { describe, expect, it } from "vitest";
import { restartBackoff } from "./service-supervisor.js";

const policy = { initialDelayMs: 1000, maxDelayMs: 30_000, resetAfterMs: 60_000, crashLoopLimit: 5 };

describe("restartBackoff", () => {
  it("doubles the wait after each quick exit and gives up at the crash-loop limit", () => {
    const b = restartBackoff(policy);
    expect([1, 2, 3, 4].map(() => b.onExit(500))).toEqual([
      { restart: true, delayMs: 1000, crashes: 1 },
      { restart: true, delayMs: 2000, crashes: 2 },
      { restart: true, delayMs: 4000, crashes: 3 },
      { restart: true, delayMs: 8000, crashes: 4 },
    ]);
    expect(b.onExit(500)).toEqual({ restart: false, crashes: 5 });
  });

  it("caps the wait", () => {
    const b = restartBackoff({ ...policy, crashLoopLimit: 100 });
    let last = 0;
    for (let i = 0; i < 10; i++) {
      const d = b.onExit(0);
      if (d.restart) last = d.delayMs;
    }
    expect(last).toBe(30_000);
  });

  it("starts counting again after a run that lasted", () => {
    const b = restartBackoff(policy);
    for (let i = 0; i < 4; i++) b.onExit(500);
    expect(b.onExit(60_000)).toEqual({ restart: true, delayMs: 1000, crashes: 1 });
  });
});
