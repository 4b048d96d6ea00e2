import { describe, expect, it } from "vitest";
import type { ArtifactEvent } from "@svc/contracts";
import type { OutboxRow } from "../store/outbox-store.js";
import { outboxRelayFactory } from "./outbox-relay.js";

const ev = (id: string): ArtifactEvent => ({
  id,
  kind: "artifact.published",
  time: new Date().toISOString(),
  tenant: "default",
  repository: "default",
  path: `p/${id}`,
  size: 1,
  digest: `sha256:${"a".repeat(64)}`,
  actor: { kind: "system", id: "t" },
  replaced: false,
});
const log = { warn: () => {}, info: () => {} };

function fakeOutbox(unsent: string[]) {
  const sent = new Set<string>();
  const marked: string[][] = [];
  return {
    sent,
    marked,
    async markSent(ids: string[]) {
      marked.push(ids);
      for (const i of ids) sent.add(i);
    },
    async drain(_age: number, limit: number, fn: (rows: OutboxRow[]) => Promise<string[]>) {
      const rows = unsent.filter((id) => !sent.has(id)).slice(0, limit).map((id) => ({ id, event: ev(id) }));
      if (rows.length === 0) return 0;
      const ok = await fn(rows);
      for (const i of ok) sent.add(i);
      return ok.length;
    },
    async prune() {
      return 0;
    },
  };
}

describe("outbox relay", () => {
  it("delivers at once and marks what was published in one batch", async () => {
    const outbox = fakeOutbox([]);
    const published: string[] = [];
    const relay = outboxRelayFactory({ outbox, publish: async (e) => (published.push(e.id), true), log, markEveryMs: 10_000 });
    expect(await relay.deliver(ev("a"))).toBe(true);
    expect(await relay.deliver(ev("b"))).toBe(true);
    expect(outbox.marked).toEqual([]);
    await relay.flushMarks();
    expect(outbox.marked).toEqual([["a", "b"]]);
    expect(published).toEqual(["a", "b"]);
  });

  it("an event NATS refused stays unmarked, and the sweep publishes it once NATS is back", async () => {
    const outbox = fakeOutbox(["a", "b", "c"]);
    let up = false;
    const published: string[] = [];
    const relay = outboxRelayFactory({ outbox, publish: async (e) => (up ? (published.push(e.id), true) : false), log });
    expect(await relay.deliver(ev("a"))).toBe(false);
    await relay.flushMarks();
    expect(outbox.marked).toEqual([]);
    expect(await relay.sweep()).toBe(0);
    up = true;
    expect(await relay.sweep()).toBe(3);
    expect(published).toEqual(["a", "b", "c"]);
    expect(await relay.sweep()).toBe(0);
  });

  it("the sweep stops at the first failure so a later event does not overtake an earlier one", async () => {
    const outbox = fakeOutbox(["a", "b", "c"]);
    const published: string[] = [];
    const relay = outboxRelayFactory({ outbox, publish: async (e) => (e.id === "b" ? false : (published.push(e.id), true)), log });
    expect(await relay.sweep()).toBe(1);
    expect(published).toEqual(["a"]);
  });
});
