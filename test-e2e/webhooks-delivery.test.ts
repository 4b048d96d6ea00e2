// Webhook deliveries as a receiver sees them: which endpoint gets what, signatures, retries,
// redelivery, paging, and slow receivers. Restarts and endpoint safety: webhooks-lifecycle.test.ts.
import { describe, expect, it } from "vitest";
import { ALL_SECRET, api, bus, deliveries, eventOf, eventually, publish, PUBLISHED_SECRET, put, remove, rx, settled, tenant, url, useWebhookSuite, verifyWebhook, type Delivery } from "./webhooks-harness.js";

useWebhookSuite();

describe("webhook deliveries", () => {
  it("each endpoint gets the events it asked for, signed so that a receiver written from the README can check them", async () => {
    const published = await put();
    const removed = await remove();
    const held = await publish("artifact.held");
    await settled(published.id, 2);
    await settled(removed.id, 2);
    await settled(held.id, 2);

    const paths = ["/all", "/published", "/removed", "/flaky", "/redirect", "/slow"];
    const receivers = (id: string) => paths.filter((p) => rx.got(p, id).length > 0);
    expect(receivers(published.id)).toEqual(["/all", "/published"]);
    expect(receivers(removed.id)).toEqual(["/all", "/removed"]);
    expect(receivers(held.id)).toEqual(["/all", "/removed"]);
    for (const id of [published.id, removed.id, held.id]) for (const p of receivers(id)) expect(rx.got(p, id), `${p} ${id}`).toHaveLength(1);

    for (const r of rx.got("/all")) expect(verifyWebhook(ALL_SECRET, r.headers, r.body)).toBe(true);
    const [pub] = rx.got("/published", published.id);
    expect(verifyWebhook(PUBLISHED_SECRET, pub!.headers, pub!.body)).toBe(true);
    expect(verifyWebhook(ALL_SECRET, pub!.headers, pub!.body)).toBe(false);
    expect(verifyWebhook(PUBLISHED_SECRET, pub!.headers, pub!.body.replace("false", "true"))).toBe(false);
    for (const r of rx.got("/removed")) expect(r.headers["webhook-signature"]).toBeUndefined();

    expect(pub!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(pub!.body)).toEqual({ type: "artifact.published", timestamp: published.time, data: published });
  });

  it("an event the stream hands over twice is delivered once", async () => {
    const event = eventOf("artifact.published", "twice.txt") as { id: string };
    // Plain NATS publishes carry no message id, so the stream keeps both copies.
    expect(bus.announce(`svc.${tenant}.artifact.published.v1`, event)).toBe(true);
    expect(bus.announce(`svc.${tenant}.artifact.published.v1`, event)).toBe(true);
    const after = await publish("artifact.published");
    await settled(event.id, 2);
    // Events are recorded in stream order, so once the later one is settled both copies were read.
    await settled(after.id, 2);
    expect(rx.got("/all", event.id)).toHaveLength(1);
    expect(rx.got("/published", event.id)).toHaveLength(1);
  });

  it("a failing receiver is retried, then set aside with its last error, and redelivered on request", async () => {
    rx.state.flakyDown = true;
    const event = await publish("artifact.released");
    const list = await settled(event.id, 3);
    // Endpoints show masked (scheme and host); the full URL as set still finds an endpoint's deliveries.
    const flaky = (await deliveries(`event=${event.id}&endpoint=${encodeURIComponent(url("/flaky"))}`))[0]!;
    const redirect = (await deliveries(`event=${event.id}&endpoint=${encodeURIComponent(url("/redirect"))}`))[0]!;
    expect(list.map((d) => d.id)).toEqual(expect.arrayContaining([flaky.id, redirect.id]));
    for (const d of list) expect(d.endpoint).toBe(url("/…"));
    expect(flaky).toMatchObject({ state: "set-aside", attempts: 3, lastStatus: 500, lastError: "HTTP 500: flaky is down", type: "artifact.released" });
    expect(redirect).toMatchObject({ state: "set-aside", attempts: 3, lastStatus: 302 });
    expect(redirect.lastError).toMatch(/redirect to \/all not followed/);
    expect(rx.got("/flaky", event.id)).toHaveLength(3);
    // The redirect was never followed: /all got the event once, from its own delivery.
    expect(rx.got("/all", event.id)).toHaveLength(1);

    const setAside = await deliveries(`state=set-aside&event=${event.id}`);
    expect(setAside.map((d) => d.id).sort()).toEqual([flaky.id, redirect.id].sort());

    rx.state.flakyDown = false;
    const again = await api("POST", `/api/webhooks/deliveries/${flaky.id}/redeliver`);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id: flaky.id, state: "pending" });
    const done = await eventually("the redelivery", async () => {
      const d = (await (await api("GET", `/api/webhooks/deliveries/${flaky.id}`)).json()) as Delivery;
      return d.state === "delivered" ? d : undefined;
    });
    expect(done).toMatchObject({ attempts: 4, lastStatus: 200, lastError: null });
    const last = rx.got("/flaky", event.id).at(-1)!;
    expect(last.headers["webhook-id"]).toBe(event.id);

    expect((await api("POST", `/api/webhooks/deliveries/${flaky.id}/redeliver`)).status).toBe(409);
    expect((await api("POST", "/api/webhooks/deliveries/999999999/redeliver")).status).toBe(404);
    const unknownField = await api("POST", `/api/webhooks/deliveries/${redirect.id}/redeliver`, { force: true });
    expect(unknownField.status).toBe(400);
    expect(await unknownField.json()).toMatchObject({ field: "force" });
  });

  it("lists deliveries page by page and refuses bad paging", async () => {
    const first = await api("GET", "/api/webhooks/deliveries?limit=1");
    expect(first.status).toBe(200);
    const cursor = first.headers.get("x-next-cursor");
    expect(cursor).toBeTruthy();
    const [one] = (await first.json()) as Delivery[];
    const next = (await (await api("GET", `/api/webhooks/deliveries?limit=2&after=${cursor}`)).json()) as Delivery[];
    expect(next).toHaveLength(2);
    expect(Number(next[0]!.id)).toBeGreaterThan(Number(one!.id));
    for (const bad of ["limit=0", "limit=501", "limit=x", "state=lost", "after=abc", "colour=red"]) {
      expect((await api("GET", `/api/webhooks/deliveries?${bad}`)).status, bad).toBe(400);
    }
    const endpoints = (await (await api("GET", "/api/webhooks/endpoints")).json()) as { url: string; signed: boolean; allEvents: boolean; events: string[] }[];
    // In the setting's order, each URL masked to its scheme and host (the path may hold a receiver's token).
    expect(endpoints[0]).toEqual({ url: url("/…"), events: expect.any(Array), allEvents: true, signed: true });
    expect(endpoints[2]).toEqual({ url: url("/…"), events: ["artifact.removed", "artifact.held"], allEvents: false, signed: false });
    const paged = await api("GET", "/api/webhooks/endpoints?limit=2");
    expect(((await paged.json()) as unknown[]).length).toBe(2);
    const rest = (await (await api("GET", `/api/webhooks/endpoints?after=${paged.headers.get("x-next-cursor")}`)).json()) as { events: string[] }[];
    expect(rest[0]).toMatchObject({ events: ["artifact.removed", "artifact.held"] });
    expect(JSON.stringify(endpoints)).not.toContain(ALL_SECRET.slice(6, 20));
  });

  it("a slow receiver does not hold up another endpoint", async () => {
    rx.state.holdSlow = true;
    const events = [await publish("artifact.finding"), await publish("artifact.finding"), await publish("artifact.finding")];
    await eventually("every finding at the fast endpoint while the slow one sits on its requests", () =>
      events.every((e) => rx.got("/all", e.id).length === 1) && rx.held.length > 0 ? true : undefined,
    );
    // The slow receiver has answered nothing yet, so nothing at the fast endpoint waited for it.
    expect(rx.state.slowAnswered).toBe(0);
    const slow = await deliveries(`endpoint=${encodeURIComponent(url("/slow"))}`);
    expect(slow.every((d) => d.state === "pending")).toBe(true);

    rx.releaseSlow();
    for (const e of events) await settled(e.id, 2);
    expect((await deliveries(`endpoint=${encodeURIComponent(url("/slow"))}&state=delivered`)).length).toBe(3);
  });

  it("publishing goes on while a receiver sits on its requests", async () => {
    rx.state.holdSlow = true;
    try {
      const finding = await publish("artifact.finding");
      await eventually("the slow receiver holding a request", () => (rx.held.length > 0 ? true : undefined));
      // Publishes through the gateway answer, and their deliveries to other endpoints arrive,
      // while the slow receiver still holds its request unanswered.
      for (let i = 0; i < 3; i++) {
        const event = await put();
        await eventually(`delivery of ${event.id} to /all`, () => (rx.got("/all", event.id).length === 1 ? true : undefined));
      }
      expect(rx.held.length).toBeGreaterThan(0);
      expect(rx.got("/slow", finding.id)).toHaveLength(1);
    } finally {
      rx.releaseSlow();
    }
  });
});
