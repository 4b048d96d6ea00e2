import { describe, expect, it } from "vitest";
import type { Walk } from "../store/walk-store.js";
import { schedulerFactory } from "./scheduler.js";

/** Two replicas share one claim table, as they share the walks table's last_fire_at. */
function cluster(walks: Walk[]) {
  const lastFire = new Map<string, number>();
  const started: { replica: string; walk: string; at: string }[] = [];
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
      runner: { begin: async (walk, _jobs, _t, at) => (started.push({ replica: id, walk, at: at!.toISOString() }), undefined) },
      log: { info: () => {}, warn: () => {} },
      now: () => clock,
    });
  return { replica, started, set: (iso: string) => (clock = new Date(iso)) };
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
