import { describe, expect, it } from "vitest";
import type { Walk } from "../store/walk-store.js";
import { schedulerFactory } from "./scheduler.js";

/** Two replicas share one claim table, as they share the walks table's last_fire_at. */
function cluster(walks: Walk[]) {
  const lastFire = new Map<string, number>();
  const started: { replica: string; walk: string; at: string }[] = [];
  /** The passes begun: the walks that went over the store together. */
  const passes: string[][] = [];
  let clock = new Date("2026-03-07T10:00:00.500Z");
  const replica = (id: string) =>
    schedulerFactory({
      store: {
        enabledWalks: async () => walks.filter((w) => w.enabled),
        markInterrupted: async () => 0,
        async claimFire(name, schedule, at) {
          const w = walks.find((x) => x.name === name);
          if (!w || w.schedule !== schedule) return false;
          if ((lastFire.get(name) ?? -Infinity) >= at.getTime()) return false;
          lastFire.set(name, at.getTime());
          return true;
        },
      },
      runner: {
        beginTogether: async (group, _trigger, at) => {
          passes.push(group.map((g) => g.walk));
          for (const g of group) started.push({ replica: id, walk: g.walk, at: at!.toISOString() });
          return [];
        },
      },
      log: { info: () => {}, warn: () => {} },
      now: () => clock,
    });
  return { replica, started, passes, set: (iso: string) => (clock = new Date(iso)) };
}
const flush = () => new Promise((r) => setTimeout(r, 0));

describe("walk scheduler", () => {
  it("fires each scheduled instant once across replicas", async () => {
    const c = cluster([{ name: "tick", schedule: "*/2 * * * * *", enabled: true, jobs: ["reclaim"] }]);
    const a = c.replica("a");
    const b = c.replica("b");
    await a.tick();
    await b.tick();
    expect(c.started).toEqual([]);
    for (const t of ["2026-03-07T10:00:02.000Z", "2026-03-07T10:00:02.010Z", "2026-03-07T10:00:04.001Z", "2026-03-07T10:00:05.000Z", "2026-03-07T10:00:06.000Z"]) {
      c.set(t);
      await b.tick();
      await a.tick();
      await flush();
    }
    expect(c.started.map((s) => s.at)).toEqual(["2026-03-07T10:00:02.000Z", "2026-03-07T10:00:04.000Z", "2026-03-07T10:00:06.000Z"]);
  });

  it("does not make up instants it slept through", async () => {
    const c = cluster([{ name: "tick", schedule: "*/2 * * * * *", enabled: true, jobs: ["reclaim"] }]);
    const a = c.replica("a");
    await a.tick();
    c.set("2026-03-07T10:00:11.000Z");
    await a.tick();
    await flush();
    expect(c.started.map((s) => s.at)).toEqual(["2026-03-07T10:00:02.000Z"]);
    c.set("2026-03-07T10:00:12.000Z");
    await a.tick();
    await flush();
    expect(c.started.map((s) => s.at)).toEqual(["2026-03-07T10:00:02.000Z", "2026-03-07T10:00:12.000Z"]);
  });

  it("walks due at the same instant go over the store in one pass; at other instants each goes alone", async () => {
    // The defaults: retention daily at 03:00, rebuild on Sundays at 03:00 (2026-03-08 is a Sunday).
    const c = cluster([
      { name: "rebuild", schedule: "0 0 3 * * 0", enabled: true, jobs: ["reclaim", "repair", "backfill"] },
      { name: "retention", schedule: "0 0 3 * * *", enabled: true, jobs: ["retention"] },
    ]);
    const a = c.replica("a");
    await a.tick();
    c.set("2026-03-08T03:00:00.000Z");
    await a.tick();
    await flush();
    c.set("2026-03-09T03:00:00.000Z");
    await a.tick();
    await flush();
    expect(c.passes).toEqual([["rebuild", "retention"], ["retention"]]);
  });

  it("leaves disabled walks alone", async () => {
    const c = cluster([{ name: "off", schedule: "* * * * * *", enabled: false, jobs: ["reclaim"] }]);
    const a = c.replica("a");
    await a.tick();
    c.set("2026-03-07T10:00:05.000Z");
    await a.tick();
    await flush();
    expect(c.started).toEqual([]);
  });
});
