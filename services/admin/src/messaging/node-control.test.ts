import { describe, expect, it } from "vitest";
import type { Bus, GatherOptions, Heartbeat } from "@svc/kit";
import { nodeRegistryFactory } from "../domain/node-registry.js";
import { nodeControlFactory } from "./node-control.js";

const control = { logs: "c.logs", metrics: "c.metrics", openapi: "c.openapi", limits: "c.limits", settingsChanged: "c.settings.changed", settings: "c.settings", content: "c.content" };
const beat = (node: string) => ({ node, fingerprint: "f" }) as Heartbeat;

/** A bus that answers every gathering with `replies` and remembers what it was asked. */
function fakeBus(replies: unknown[]) {
  const asked: { subject: string; request: unknown; expectNodes?: string[]; maxWaitMs?: number }[] = [];
  const announced: { subject: string; message: unknown }[] = [];
  const bus: Pick<Bus, "gather" | "announce"> = {
    async gather(subject: string, request: unknown, maxWaitMs: number, opts?: GatherOptions) {
      asked.push({ subject, request, expectNodes: opts?.expectNodes ? [...opts.expectNodes] : undefined, maxWaitMs });
      return replies;
    },
    announce(subject: string, message: unknown) {
      announced.push({ subject, message });
      return true;
    },
  };
  return { bus, asked, announced };
}

function setUp(replies: unknown[]) {
  let clock = 0;
  const nodes = nodeRegistryFactory({ now: () => clock, warmUpMs: 7_000 });
  const { bus, asked, announced } = fakeBus(replies);
  const peers = nodeControlFactory({ bus, control, nodes, self: "admin@me" });
  return { nodes, peers, asked, announced, advance: (ms: number) => (clock += ms) };
}

describe("admin's control of the other nodes", () => {
  it("expects a reply from every other node the heartbeats know, and waits the window until it can know them", async () => {
    const { nodes, peers, asked, advance } = setUp([]);
    for (const n of ["admin@me", "auth@a", "walker@b"]) nodes.record(beat(n));
    await peers.gatherMetrics();
    expect(asked[0]?.expectNodes).toBeUndefined();
    advance(7_000);
    await peers.gatherMetrics();
    expect(asked[1]).toMatchObject({ subject: "c.metrics", request: {}, expectNodes: ["auth@a", "walker@b"] });
  });

  it("waits up to two seconds for nodes it knows (a gathering ends once they all replied), the 400 ms window while it cannot know them", async () => {
    const { nodes, peers, asked, advance } = setUp([]);
    for (const n of ["admin@me", "auth@a"]) nodes.record(beat(n));
    await peers.gatherLogs({ limit: 5 });
    advance(7_000);
    await peers.gatherLogs({ limit: 5 });
    expect(asked.map((a) => a.maxWaitMs)).toEqual([400, 2_000]);
  });

  it("hands on each other node's reply and leaves out its own and what has not the reply's shape", async () => {
    const logs = { node: "auth@a", service: "auth", entries: [] };
    const metrics = { node: "walker@b", service: "walker", metrics: [] };
    const { peers, asked } = setUp([logs, metrics, { node: "admin@me", service: "admin", entries: [], metrics: [] }, null, { entries: [] }]);
    expect(await peers.gatherLogs({ limit: 5 })).toEqual([logs]);
    expect(asked[0]).toMatchObject({ subject: "c.logs", request: { limit: 5 } });
    expect(await peers.gatherMetrics()).toEqual([metrics]);
    expect((await peers.gatherApiReports()).map((r) => r.node)).toEqual(["auth@a", "walker@b"]);
  });

  it("announces a tenant's changed rate limit on the limits subject", () => {
    const { peers, announced } = setUp([]);
    expect(peers.announceLimitsChanged("default")).toBe(true);
    expect(announced).toEqual([{ subject: "c.limits", message: { tenant: "default" } }]);
  });
});
