import { describe, expect, it } from "vitest";
import type { CredentialChanged } from "@svc/contracts";
import { credentialAnnouncerFactory } from "./credential-announcer.js";

/** The outbox table in memory, in insertion order; `drain` ignores age (minAgeMs 0 below). */
function memoryOutbox() {
  const rows = new Map<string, { event: CredentialChanged; attempts: number }>();
  return {
    rows,
    add: async (event: CredentialChanged) => void rows.set(event.id, { event, attempts: 0 }),
    remove: async (ids: string[]) => ids.forEach((id) => rows.delete(id)),
    async drain(_minAgeMs: number, limit: number, fn: (events: CredentialChanged[]) => Promise<string[]>) {
      const batch = [...rows.values()].slice(0, limit);
      const sent = await fn(batch.map((r) => r.event));
      for (const r of batch) {
        if (sent.includes(r.event.id)) rows.delete(r.event.id);
        else r.attempts++;
      }
      return sent.length;
    },
  };
}

/** A NATS that is down until `up` is set, recording what it took. */
function switchableBus() {
  const bus = {
    up: false,
    taken: [] as CredentialChanged[],
    publish: async (_kind: string, event: CredentialChanged) => {
      if (bus.up) bus.taken.push(event);
      return bus.up;
    },
    ready: async () => bus.up,
  };
  return bus;
}

const quietLog = { warn: () => {}, info: () => {} };

function setup() {
  const outbox = memoryOutbox();
  const bus = switchableBus();
  const announcer = credentialAnnouncerFactory({ bus: bus as never, outbox, tenant: "acme", log: quietLog, minAgeMs: 0, removeEveryMs: 1 });
  return { outbox, bus, announcer };
}

describe("credential announcements", () => {
  it("made while NATS is down wait in the outbox and are relayed, in order, once it is back", async () => {
    const { outbox, bus, announcer } = setup();
    const first = await announcer.record(undefined, { subject: { kind: "group", id: "ops" }, change: "grants" });
    const second = await announcer.record(undefined, { subject: { kind: "key", id: "a".repeat(64) }, change: "revoked" });
    await announcer.deliver(first, second);
    expect(bus.taken).toEqual([]);
    expect(outbox.rows.size).toBe(2);

    expect(await announcer.sweep()).toBe(0); // still down: kept, never dropped
    expect([...outbox.rows.values()].map((r) => r.attempts)).toEqual([1, 1]);

    bus.up = true;
    expect(await announcer.sweep()).toBe(2);
    expect(bus.taken.map((e) => e.id)).toEqual([first.id, second.id]);
    expect(bus.taken[0]).toEqual({ id: first.id, time: expect.any(String), tenant: "acme", subject: { kind: "group", id: "ops" }, change: "grants" });
    expect(outbox.rows.size).toBe(0);
    await announcer.stop();
  });

  it("published at once leave the outbox without waiting for the relay", async () => {
    const { outbox, bus, announcer } = setup();
    bus.up = true;
    const e = await announcer.record(undefined, { subject: { kind: "person", id: "oidc/alice" }, change: "grants" });
    await announcer.deliver(e);
    expect(bus.taken.map((t) => t.id)).toEqual([e.id]);
    await announcer.stop(); // flushes the batched removal
    expect(outbox.rows.size).toBe(0);
  });

  it("a relay stops at the first refusal, so a later change never overtakes an earlier one", async () => {
    const { outbox, bus, announcer } = setup();
    const events = [];
    for (let i = 0; i < 3; i++) events.push(await announcer.record(undefined, { subject: { kind: "group", id: `g${i}` }, change: "grants" }));
    let calls = 0;
    bus.publish = async (_kind, event) => {
      calls++;
      if (calls === 2) return false; // the second fails once
      bus.taken.push(event);
      return true;
    };
    expect(await announcer.sweep()).toBe(1);
    expect([...outbox.rows.keys()]).toEqual([events[1]!.id, events[2]!.id]);
    expect(await announcer.sweep()).toBe(2);
    expect(bus.taken.map((e) => e.subject.id)).toEqual(["g0", "g1", "g2"]);
    await announcer.stop();
  });
});
