import { describe, expect, it } from "vitest";
import type { RunRecord, Walk } from "../store/walk-store.js";
import type { Busy } from "./walk-runner.js";
import { schedulerFactory } from "./scheduler.js";

/** Two replicas share one claim table, as they share the walks table's last_fire_at. */
function cluster(walks: Walk[], o: { busy?: Busy } = {}) {
  const lastFire = new Map<string, number>();
  const started: { replica: string; walk: string; at: string }[] = [];
  /** The passes begun: the walks that went over the store together. */
  const passes: string[][] = [];
  const skipped: { replica: string; walk: string; scheduledFor: string; holder: string; jobs: string[]; detail: string }[] = [];
  let clock = new Date("2026-03-07T10:00:00.500Z");
  const replica = (id: string) =>
    schedulerFactory({
      store: {
        enabledWalks: async () => walks.filter((w) => w.enabled),
        markInterrupted: async () => 0,
        async skipRun(r) {
          skipped.push({ replica: id, ...r, scheduledFor: r.scheduledFor.toISOString() });
          return {} as RunRecord;
        },
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
          if (o.busy) return { started: [], busy: o.busy };
          for (const g of group) started.push({ replica: id, walk: g.walk, at: at!.toISOString() });
          return { started: [], busy: null };
        },
      },
      holder: `walker@${id}`,
      log: { info: () => {}, warn: () => {} },
      now: () => clock,
    });
  return { replica, started, passes, skipped, set: (iso: string) => (clock = new Date(iso)) };
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

  it("an instant due while another walk holds the store is skipped, with a record naming that walk, once across replicas", async () => {
    const busy: Busy = { walk: "rebuild", run: "17", node: "walker@b", since: new Date("2026-03-07T09:58:00.000Z") };
    const c = cluster([{ name: "retention", schedule: "0 1 10 * * *", enabled: true, jobs: ["retention"] }], { busy });
    const a = c.replica("a");
    const b = c.replica("b");
    await a.tick();
    await b.tick();
    c.set("2026-03-07T10:01:00.000Z");
    await a.tick();
    await b.tick();
    await flush();
    expect(c.skipped).toEqual([
      {
        replica: "a",
        walk: "retention",
        scheduledFor: "2026-03-07T10:01:00.000Z",
        holder: "walker@a",
        jobs: ["retention"],
        detail: "skipped: walk rebuild is going over the store (run 17, on walker@b, since 2026-03-07T09:58:00.000Z)",
      },
    ]);
    // Not queued: nothing runs until the next instant.
    c.set("2026-03-07T10:01:30.000Z");
    await a.tick();
    await flush();
    expect(c.skipped).toHaveLength(1);
  });
});
