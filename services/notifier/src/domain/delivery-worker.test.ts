import pino from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { AttemptRecord, ClaimedDelivery } from "../store/delivery-store.js";
import { deliveryWorkerFactory, type DeliveryWorker } from "./delivery-worker.js";
import type { Endpoint } from "@svc/kit";
import { webhookMetricsFactory } from "./webhook-metrics.js";
import type { Attempt, AttemptResult } from "./webhook-sender.js";

/** The store's contract in memory: claims with tokens, due times, attempts recorded per lease. */
function memoryStore() {
  const rows = new Map<string, ClaimedDelivery & { due: number }>();
  let seq = 0;
  return {
    rows,
    add(endpoint: string, eventId: string) {
      const id = String(++seq);
      rows.set(id, {
        id, event_id: eventId, endpoint, state: "pending", attempts: 0, round_attempts: 0, next_attempt_at: new Date(), lease_until: null, lease_token: null,
        last_status: null, last_error: null, created_at: new Date(), updated_at: new Date(), delivered_at: null, payload: `{"id":"${eventId}"}`, kind: "artifact.published", event_time: new Date(), due: Date.now(),
      });
    },
    async claim(endpoint: string, _leaseMs: number, token: string) {
      const r = [...rows.values()].find((x) => x.endpoint === endpoint && x.state === "pending" && x.due <= Date.now() && x.lease_token === null);
      if (!r) return undefined;
      r.lease_token = token;
      return { ...r };
    },
    async recordAttempt(id: string, token: string, rec: AttemptRecord) {
      const r = rows.get(id);
      if (!r || r.lease_token !== token) return false;
      r.lease_token = null;
      r.attempts++;
      r.round_attempts++;
      r.state = rec.state;
      r.last_status = rec.status;
      r.last_error = rec.state === "delivered" ? null : rec.error;
      if (rec.state === "pending") r.due = Date.now() + rec.retryInMs;
      return true;
    },
    async release(id: string, token: string) {
      const r = rows.get(id);
      if (r?.lease_token === token) r.lease_token = null;
    },
  };
}

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
};

const ep = (url: string): Endpoint => ({ url, kinds: ["artifact.published"], allEvents: false });

describe("the delivery lanes", () => {
  let worker: DeliveryWorker | undefined;
  afterEach(async () => worker?.stop(100));

  const start = (store: ReturnType<typeof memoryStore>, endpoints: Endpoint[], send: (a: Attempt) => Promise<AttemptResult>, retries = 2) => {
    worker = deliveryWorkerFactory({
      store, sender: { send }, endpoints, retries, retryBaseMs: 20, leaseMs: 5000, concurrency: 2, pollMs: 20,
      log: pino({ level: "silent" }), metrics: webhookMetricsFactory(new Registry()), random: () => 0.5,
    });
    worker.start();
  };

  it("retries a failing delivery `retries` times after the first try, then sets it aside with the last error", async () => {
    const store = memoryStore();
    store.add("https://a.example/", "e1");
    const tries: string[] = [];
    start(store, [ep("https://a.example/")], async (a) => {
      tries.push(a.id);
      return { outcome: "failed", status: 500, error: "HTTP 500" };
    });
    const row = store.rows.get("1")!;
    await until(() => row.state === "set-aside");
    expect(tries).toEqual(["e1", "e1", "e1"]);
    expect(row).toMatchObject({ attempts: 3, last_status: 500, last_error: "HTTP 500" });
  });

  it("delivers after a failure when the receiver recovers", async () => {
    const store = memoryStore();
    store.add("https://a.example/", "e1");
    let n = 0;
    start(store, [ep("https://a.example/")], async () => (++n === 1 ? { outcome: "failed", error: "ECONNREFUSED" } : { outcome: "delivered", status: 200 }));
    const row = store.rows.get("1")!;
    await until(() => row.state === "delivered");
    expect(row).toMatchObject({ attempts: 2, last_status: 200, last_error: null });
  });

  it("sets a refused delivery aside at once", async () => {
    const store = memoryStore();
    store.add("https://a.example/", "e1");
    let n = 0;
    start(store, [ep("https://a.example/")], async () => {
      n++;
      return { outcome: "refused", error: "refused: a.example resolves to 10.0.0.1, which is in the private range" };
    });
    const row = store.rows.get("1")!;
    await until(() => row.state === "set-aside");
    expect(n).toBe(1);
    expect(row.last_error).toMatch(/private range/);
  });

  it("keeps delivering to one endpoint while another one hangs", async () => {
    const store = memoryStore();
    for (let i = 0; i < 5; i++) store.add("https://slow.example/", `s${i}`);
    for (let i = 0; i < 5; i++) store.add("https://fast.example/", `f${i}`);
    const hanging: (() => void)[] = [];
    start(store, [ep("https://slow.example/"), ep("https://fast.example/")], (a) =>
      a.url.startsWith("https://slow") ? new Promise((r) => hanging.push(() => r({ outcome: "delivered", status: 200 }))) : Promise.resolve({ outcome: "delivered", status: 200 }),
    );
    const fast = [...store.rows.values()].filter((r) => r.endpoint.startsWith("https://fast"));
    await until(() => fast.every((r) => r.state === "delivered"));
    // The slow endpoint has only its own lane's worth in flight, and nothing of it is done.
    expect(hanging.length).toBe(2);
    expect([...store.rows.values()].filter((r) => r.endpoint.startsWith("https://slow") && r.state === "delivered")).toHaveLength(0);
    await until(() => {
      for (const h of hanging.splice(0)) h();
      return [...store.rows.values()].every((r) => r.state === "delivered");
    });
  });

  it("follows a run-time change of the endpoints: a new one gets its lane, a removed one is no longer sent to, a kept one signs with its new key", async () => {
    const store = memoryStore();
    const sent: Attempt[] = [];
    start(store, [ep("https://a.example/")], async (a) => {
      sent.push(a);
      return { outcome: "delivered", status: 200 };
    });
    store.add("https://a.example/", "e1");
    await until(() => sent.length === 1);

    const key = Buffer.alloc(16, 7);
    worker!.reconfigure([{ ...ep("https://a.example/"), key }, ep("https://b.example/")], true);
    store.add("https://b.example/", "e2");
    store.add("https://a.example/", "e3");
    await until(() => sent.length === 3);
    expect(sent.find((a) => a.id === "e2")?.url).toBe("https://b.example/");
    expect(sent.find((a) => a.id === "e3")?.key).toEqual(key);

    worker!.reconfigure([ep("https://b.example/")], true);
    store.add("https://a.example/", "e4");
    store.add("https://b.example/", "e5");
    await until(() => sent.some((a) => a.id === "e5"));
    await new Promise((r) => setTimeout(r, 100));
    expect(sent.map((a) => a.id)).not.toContain("e4");
    expect([...store.rows.values()].find((r) => r.event_id === "e4")?.state).toBe("pending");

    // Delivery switched off: nothing more is claimed; on again, the waiting delivery goes.
    worker!.reconfigure([ep("https://a.example/"), ep("https://b.example/")], false);
    store.add("https://b.example/", "e6");
    await new Promise((r) => setTimeout(r, 100));
    expect(sent.map((a) => a.id)).not.toContain("e6");
    worker!.reconfigure([ep("https://a.example/"), ep("https://b.example/")], true);
    await until(() => sent.some((a) => a.id === "e6") && sent.some((a) => a.id === "e4"));
  });
});
