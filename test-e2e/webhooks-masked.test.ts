// Webhook URLs carry their receiver's token (Slack, Teams and Discord in the path, others in
// `?token=`): deliveries go to the full URL, and nothing else shows more than its scheme and host.
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, signInDev, type TestBrowser } from "./browser.js";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

const SLACK_PATH = "/services/T000/B000/XXXXSECRET";
const QUERY_PATH = "/hook?token=SECRET";
/** What must never show: the Slack-style token, its path, and the query token. */
const leaks = (text: string) => ["XXXXSECRET", "T000/B000", "token=SECRET"].filter((t) => text.includes(t));

describe("webhook URLs are secrets", () => {
  let s: Suite;
  let server: Server;
  const received: string[] = [];
  let origin: string;
  let b: TestBrowser;
  let viewer: Page;

  beforeAll(async () => {
    server = createServer((req, res) => {
      received.push(req.url ?? "");
      req.resume();
      req.on("end", () => res.writeHead(200).end("ok"));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    s = await startSuite({
      env: {
        SVC_PROFILE: "dev",
        SVC_WEBHOOK: "true",
        SVC_WEBHOOK_ALLOW_INTERNAL: "true",
        SVC_WEBHOOK_ENDPOINTS: `${origin}${SLACK_PATH} none\n${origin}${QUERY_PATH} published`,
        SVC_WEBHOOK_SECRETS: `${origin}${SLACK_PATH} whsec_${Buffer.alloc(32, 7).toString("base64")}`,
      },
    });
    b = await launchBrowser();
    viewer = await signInDev(await b.newPage(), s.gatewayUrl, "viewer");
  });
  afterAll(async () => {
    await b?.close();
    await s?.stop();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  it("delivers to the full URLs, and the API, the console's pages and the logs show only scheme and host", async () => {
    const path = `files/${randomUUID()}.txt`;
    expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body: "hello" })).status).toBe(201);
    // Delivery still goes to the full URL, token and all.
    await eventually("both deliveries", async () => (received.includes(SLACK_PATH) && received.includes(QUERY_PATH) ? true : undefined), 60_000);

    const read = async (apiPath: string) => {
      const res = await s.call("GET", apiPath, { key: s.bootstrapKey });
      expect(res.status, apiPath).toBe(200);
      return res.text();
    };
    const endpoints = JSON.parse(await read("/api/webhooks/endpoints")) as { url: string; allEvents: boolean; signed: boolean }[];
    expect(endpoints).toEqual([
      { url: `${origin}/…`, events: expect.any(Array), allEvents: true, signed: true },
      { url: `${origin}/…`, events: ["artifact.published"], allEvents: false, signed: false },
    ]);
    const deliveries = await eventually("both deliveries recorded as delivered", async () => {
      const list = JSON.parse(await read("/api/webhooks/deliveries")) as { endpoint: string; state: string }[];
      return list.filter((d) => d.state === "delivered").length >= 2 ? list : undefined;
    });
    for (const d of deliveries) expect(d.endpoint).toBe(`${origin}/…`);
    // An operator who knows the URL still finds its deliveries by it.
    expect(JSON.parse(await read(`/api/webhooks/deliveries?endpoint=${encodeURIComponent(`${origin}${SLACK_PATH}`)}`))).toHaveLength(1);

    const settings = await read("/api/settings");
    expect(settings).toContain("svc.webhook-endpoints");
    expect(settings).toContain(`${origin}/… none`);
    const logs = await read("/api/logs?service=notifier&limit=1000");
    expect(logs).toContain(`${origin}/…`);
    for (const [what, text] of [["endpoints", JSON.stringify(endpoints)], ["deliveries", JSON.stringify(deliveries)], ["settings", settings], ["logs", logs]] as const) {
      expect(leaks(text), what).toEqual([]);
    }

    // The viewer's console pages.
    for (const page of ["/ui/webhooks", "/ui/settings", "/ui/logs?service=notifier"]) {
      const res = await viewer.goto(`${s.gatewayUrl}${page}`);
      expect(res?.status(), page).toBe(200);
      const html = await viewer.content();
      expect(leaks(html), page).toEqual([]);
    }
    expect(await viewer.goto(`${s.gatewayUrl}/ui/webhooks`).then(() => viewer.textContent("#endpoints"))).toContain(`${origin}/…`);
    // Nor the notifier's own output, wherever it goes.
    expect(leaks(s.output("notifier").join("\n"))).toEqual([]);
  });
});
