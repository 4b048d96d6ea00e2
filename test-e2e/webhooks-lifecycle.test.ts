// Webhook deliveries across notifier restarts, their retention (svc.webhook-history), and the
// refusal of internal addresses. What a receiver gets: webhooks-delivery.test.ts.
import { describe, expect, inject, it } from "vitest";
import { runToExit } from "@svc/devstack/service-runner";
import { deliveries, eventually, publish, put, restartNotifier, rx, s, settled, url, useWebhookSuite } from "./webhooks-harness.js";

useWebhookSuite();

describe("webhook deliveries", () => {
  it("delivery records survive a restart, a pending delivery resumes, and a notifier that was down catches up", async () => {
    // Compared once every first attempt has been made: deliveries of the tests before (to the
    // slow receiver, released just now) may still be on their way on a busy machine.
    const before = await eventually("every first attempt made", async () => {
      const list = await deliveries("limit=500");
      return list.every((d) => d.state !== "pending" || d.attempts >= 1) ? list : undefined;
    });
    // A long pause, so that the delivery is still waiting for its retry when the notifier stops.
    await restartNotifier({ SVC_WEBHOOK_RETRY_BASE: "4s" });
    rx.state.flakyDown = true;
    const waiting = await publish("artifact.released");
    await eventually("a failed first attempt", async () => {
      const d = (await deliveries(`event=${waiting.id}&endpoint=${encodeURIComponent(url("/flaky"))}`))[0];
      return d && d.state === "pending" && d.attempts >= 1 ? d : undefined;
    });
    await s.stopService("notifier");
    rx.state.flakyDown = false;
    // The store takes a publish while no notifier runs; the event waits in the stream.
    const whileDown = await put();
    await restartNotifier({ SVC_WEBHOOK_RETRY_BASE: "100ms" });

    const caughtUp = await settled(whileDown.id, 2);
    expect(caughtUp.every((d) => d.state === "delivered")).toBe(true);
    expect(rx.got("/all", whileDown.id)).toHaveLength(1);
    const resumed = await eventually("the waiting delivery to go out", async () => {
      const d = (await deliveries(`event=${waiting.id}&endpoint=${encodeURIComponent(url("/flaky"))}`))[0];
      return d?.state === "delivered" ? d : undefined;
    });
    expect(resumed.attempts).toBeGreaterThanOrEqual(2);

    const after = await deliveries("limit=500");
    for (const d of before) expect(after.find((a) => a.id === d.id), d.id).toMatchObject({ event: d.event, endpoint: d.endpoint, state: d.state, attempts: d.attempts });
  });

  it("forgets finished deliveries after svc.webhook-history, never a pending one", async () => {
    const older = await deliveries("state=delivered&limit=500");
    expect(older.length).toBeGreaterThan(0);
    // Failed attempts wait an hour for their retry: /flaky and /redirect stay pending.
    rx.state.flakyDown = true;
    await restartNotifier({ SVC_WEBHOOK_HISTORY: "3s", SVC_WEBHOOK_RETRY_BASE: "1h" });
    const event = await publish("artifact.released");
    await eventually("the delivery to /all", async () => {
      const d = (await deliveries(`event=${event.id}&endpoint=${encodeURIComponent(url("/all"))}`))[0];
      return d?.state === "delivered" ? d : undefined;
    });
    const pending = await eventually("two failed first attempts", async () => {
      const list = (await deliveries(`event=${event.id}`)).filter((d) => d.state === "pending" && d.attempts >= 1);
      return list.length === 2 ? list : undefined;
    });

    // Three seconds after it finished, the delivered one is gone; so is everything older.
    const left = await eventually("the finished deliveries to be forgotten", async () => {
      const list = await deliveries(`event=${event.id}`);
      return list.length === 2 ? list : undefined;
    }, 20_000);
    expect(left.map((d) => d.id).sort()).toEqual(pending.map((d) => d.id).sort());
    const remaining = await deliveries("limit=500");
    for (const d of older) expect(remaining.find((r) => r.id === d.id), d.id).toBeUndefined();
    expect(remaining.every((d) => d.state === "pending")).toBe(true);
    await s.waitForOutput(/forgot webhook deliveries older than svc.webhook-history/, { service: "notifier" });

    rx.state.flakyDown = false;
    await restartNotifier({ SVC_WEBHOOK_HISTORY: undefined, SVC_WEBHOOK_RETRY_BASE: "100ms" });
  });

  it("refuses to start with an endpoint written as an internal address, naming each line", async () => {
    const forbidden = [
      "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "169.254.10.10", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255",
      "[::1]", "[::]", "[fc00::1]", "[fd00:ec2::254]", "[fe80::1]", "[ff02::1]", "[::ffff:127.0.0.1]", "[::ffff:169.254.169.254]", "[::ffff:10.0.0.1]",
    ];
    const lines = [...forbidden.map((h) => `https://${h}/hook none`), "http://hooks.example.com/plain none"];
    const r = await runToExit("notifier", {
      SVC_DATABASE_URL: s.databaseUrl,
      SVC_NATS_URL: inject("natsUrl"),
      SVC_INTERNAL_SECRET: "s".repeat(40),
      SVC_PORT: "0",
      SVC_WEBHOOK: "true",
      SVC_WEBHOOK_ENDPOINTS: lines.join("\n"),
    });
    expect(r.code).not.toBe(0);
    expect(r.output).toContain("refusing to start");
    const ranges = ["loopback", "private", "private", "private", "cloud metadata", "link-local", "shared address space (CGNAT)", "unspecified", "multicast", "broadcast",
      "loopback", "unspecified", "unique local", "cloud metadata", "link-local", "multicast", "loopback", "cloud metadata", "private"];
    ranges.forEach((range, i) => expect(r.output).toMatch(new RegExp(`svc\\.webhook-endpoints \\(from environment SVC_WEBHOOK_ENDPOINTS\\) line ${i + 1} .* is in the ${range.replace(/[()]/g, "\\$&")} range`)));
    // The line is quoted with its URL masked: a path may hold a receiver's token.
    expect(r.output).toMatch(/line 20 "http:\/\/hooks\.example\.com\/… none": .*must be an https URL/);
  });

  it("with internal addresses not allowed, an endpoint whose name resolves to one is set aside and never sent to", async () => {
    await restartNotifier({
      SVC_WEBHOOK_ALLOW_INTERNAL: "false",
      SVC_WEBHOOK_ENDPOINTS: `${url("/all", "localhost")} none`,
      SVC_WEBHOOK_SECRETS: "",
    });
    const event = await put();
    const [d] = await settled(event.id, 1);
    expect(d).toMatchObject({ endpoint: url("/…", "localhost"), state: "set-aside", attempts: 1, lastStatus: null });
    expect(d!.lastError).toMatch(/^refused: localhost resolves to 127\.0\.0\.1, which is in the loopback range/);
    expect(rx.got("/all", event.id)).toHaveLength(0);
  });
});
