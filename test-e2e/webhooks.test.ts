import { execFileSync } from "node:child_process";
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createBus, createLogger, identityHeaders, type Bus } from "@svc/kit";
import { keyId } from "@svc/keys";
import { runToExit } from "@svc/devstack/service-runner";
import { startSuite, type Suite } from "./suite.js";

/** The receiver's check, as the README's Webhooks section gives it. */
function verifyWebhook(secret: string, headers: Record<string, string | string[] | undefined>, body: string): boolean {
  const key = secret.startsWith("whsec_") ? Buffer.from(secret.slice(6), "base64") : Buffer.from(secret, "utf8");
  const id = headers["webhook-id"] as string | undefined;
  const ts = headers["webhook-timestamp"] as string | undefined;
  if (!/^\d+$/.test(ts ?? "") || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false; // stale or replayed
  const want = Buffer.from(`v1,${createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64")}`);
  return ((headers["webhook-signature"] as string | undefined) ?? "").split(" ").some((s) => s.length === want.length && timingSafeEqual(Buffer.from(s), want));
}

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A real HTTPS receiver on 127.0.0.1 with a certificate made for this run. */
async function startReceiver(dir: string) {
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-subj", "/CN=localhost",
    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
  ], { stdio: "ignore" });
  const state = { flakyDown: false, holdSlow: false, slowAnswered: 0 };
  const received: Received[] = [];
  const held: (() => void)[] = [];
  const server: Server = createServer({ key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }, (req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const path = req.url ?? "";
      received.push({ path, headers: req.headers, body });
      if (path === "/flaky" && state.flakyDown) res.writeHead(500).end("flaky is down");
      else if (path === "/redirect") res.writeHead(302, { location: "/all" }).end();
      else if (path === "/slow" && state.holdSlow) {
        held.push(() => {
          state.slowAnswered++;
          res.writeHead(200).end();
        });
      } else {
        if (path === "/slow") state.slowAnswered++;
        res.writeHead(200).end("ok");
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    caFile: join(dir, "cert.pem"),
    state,
    held,
    /** Requests to one path carrying one event. */
    got: (path: string, eventId?: string) => received.filter((r) => r.path === path && (eventId === undefined || r.headers["webhook-id"] === eventId)),
    releaseSlow() {
      state.holdSlow = false;
      for (const answer of held.splice(0)) answer();
    },
    async stop() {
      this.releaseSlow();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

interface Delivery {
  id: string;
  event: string;
  type: string;
  endpoint: string;
  state: "pending" | "delivered" | "set-aside";
  attempts: number;
  nextAttempt: string | null;
  lastStatus: number | null;
  lastError: string | null;
}

/** Polls until `check` returns a value that is not undefined; no timing is asserted. */
async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const tenant = `wh-${randomBytes(4).toString("hex")}`;
const ALL_SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const PUBLISHED_SECRET = `plain-${randomBytes(12).toString("hex")}`;

let s: Suite;
let rx: Receiver;
let bus: Bus;
let viaGateway = false;
let url: (path: string, host?: string) => string;

/** The notifier's API: through the gateway once it routes /api/webhooks, else signed like the gateway would. */
async function api(method: string, path: string, body?: unknown): Promise<Response> {
  if (viaGateway) return s.call(method, path, { key: s.bootstrapKey, body: body as object | undefined });
  const headers: Record<string, string> = identityHeaders(s.internalSecret, method, path, `key:${tenant}:${keyId(s.bootstrapKey)}`);
  if (body !== undefined) headers["content-type"] = "application/json";
  return fetch(`${s.urls.notifier}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function deliveries(query: string): Promise<Delivery[]> {
  const res = await api("GET", `/api/webhooks/deliveries?${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Delivery[];
}

/** Waits until the event has exactly `count` deliveries and none is pending. */
const settled = (eventId: string, count: number) =>
  eventually(`the deliveries of ${eventId} to settle`, async () => {
    const list = await deliveries(`event=${eventId}`);
    return list.length === count && list.every((d) => d.state !== "pending") ? list : undefined;
  });

type Kind = "artifact.published" | "artifact.removed" | "artifact.held" | "artifact.released" | "artifact.finding";

/** A well-formed event of the catalog, as the artifacts service publishes it. */
function eventOf(kind: Kind, path: string): Record<string, unknown> {
  const content = `content of ${path}`;
  const extra: Record<Kind, Record<string, unknown>> = {
    "artifact.published": { replaced: false },
    "artifact.removed": { reason: "request" },
    "artifact.held": { reason: "quarantined by policy" },
    "artifact.released": { reason: "reviewed" },
    "artifact.finding": { finding: { type: "vulnerability", severity: "high", summary: "CVE-2026-0001 in x" } },
  };
  return {
    kind,
    id: randomUUID(),
    time: new Date().toISOString(),
    tenant,
    repository: "default",
    path,
    size: Buffer.byteLength(content),
    digest: `sha256:${createHash("sha256").update(content).digest("hex")}`,
    actor: { kind: "key", id: keyId(s.bootstrapKey) },
    ...extra[kind],
  };
}

async function publish(kind: Kind, path = `files/${randomUUID()}.txt`): Promise<Record<string, unknown> & { id: string }> {
  const event = eventOf(kind, path) as Record<string, unknown> & { id: string };
  expect(await bus.publish(kind, event as never)).toBe(true);
  return event;
}

/** Artifact events seen on the tenant's subjects, by kind and path: what the artifacts service published. */
const onBus = new Map<string, Record<string, unknown> & { id: string }>();
/** Whether a PUT through the gateway publishes events (the artifacts service's outbox); probed once. */
let realPublishes = false;

/** A publish: a real PUT through the gateway when the artifacts service publishes events, else the same event put on the stream here. */
async function put(path = `files/${randomUUID()}.txt`): Promise<Record<string, unknown> & { id: string }> {
  if (!realPublishes) return publish("artifact.published", path);
  const res = await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body: `content of ${path}` });
  expect(res.status).toBeLessThan(300);
  return eventually(`the event of PUT ${path}`, () => onBus.get(`artifact.published ${path}`));
}

/** A removal: a real DELETE through the gateway when events are published, else one put on the stream here. */
async function remove(path = `files/${randomUUID()}.txt`): Promise<Record<string, unknown> & { id: string }> {
  if (!realPublishes) return publish("artifact.removed", path);
  await put(path);
  expect((await s.call("DELETE", `/repository/default/${path}`, { key: s.bootstrapKey })).status).toBe(204);
  return eventually(`the event of DELETE ${path}`, () => onBus.get(`artifact.removed ${path}`));
}

const consumingLines = () => s.output("notifier").filter((l) => l.includes("consuming artifact events")).length;

async function restartNotifier(env?: Record<string, string | undefined>): Promise<void> {
  const before = consumingLines();
  await s.stopService("notifier");
  await s.startService("notifier", env);
  await eventually("the notifier to consume again", () => (consumingLines() > before ? true : undefined));
}

beforeAll(async () => {
  rx = await startReceiver(mkdtempSync(join(inject("dataDir"), "webhooks-")));
  url = (path, host = "127.0.0.1") => `https://${host}:${rx.port}${path}`;
  const endpoints = [
    `${url("/all")} none`,
    `${url("/published", "localhost")} published`,
    `${url("/removed")} removed, artifact.held`,
    `${url("/flaky")} artifact.released`,
    `${url("/redirect")} released`,
    `${url("/slow")} finding`,
  ];
  s = await startSuite({
    env: {
      SVC_TENANT: tenant,
      SVC_WEBHOOK: "true",
      SVC_WEBHOOK_ENDPOINTS: endpoints.join("\n"),
      SVC_WEBHOOK_SECRETS: `${url("/all")} ${ALL_SECRET}; ${url("/published", "localhost")} ${PUBLISHED_SECRET}`,
      SVC_WEBHOOK_ATTEMPTS: "2",
      SVC_WEBHOOK_ALLOW_INTERNAL: "true",
      SVC_WEBHOOK_RETRY_BASE: "100ms",
      NODE_EXTRA_CA_CERTS: rx.caFile,
    },
  });
  const { log } = createLogger("webhooks-test", "silent");
  bus = createBus({ url: inject("natsUrl"), tenant, name: "webhooks-test", log });
  await eventually("the test's NATS link", () => (bus.connected() ? true : undefined));
  await eventually("the notifier to consume events", () => (consumingLines() > 0 ? true : undefined));
  for (const kind of ["artifact.published", "artifact.removed"] as const) {
    bus.subscribe(kind, (e) => onBus.set(`${e.kind} ${e.path}`, e as unknown as Record<string, unknown> & { id: string }));
  }
  const probe = `probe/${randomUUID()}.txt`;
  const stored = await s.call("PUT", `/repository/default/${probe}`, { key: s.bootstrapKey, body: "probe" });
  realPublishes = stored.status < 300 && (await eventually("a published event", () => onBus.get(`artifact.published ${probe}`), 3000).catch(() => undefined)) !== undefined;
  const routed = await s.call("GET", "/api/webhooks/endpoints", { key: s.bootstrapKey });
  viaGateway = routed.status === 200 && Array.isArray(await routed.json().catch(() => null));
});

afterAll(async () => {
  await bus?.close();
  await s?.stop();
  await rx?.stop();
});

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
    const flaky = list.find((d) => d.endpoint === url("/flaky"))!;
    const redirect = list.find((d) => d.endpoint === url("/redirect"))!;
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
    expect(endpoints.find((e) => e.url === url("/all"))).toEqual({ url: url("/all"), events: expect.any(Array), allEvents: true, signed: true });
    expect(endpoints.find((e) => e.url === url("/removed"))).toEqual({ url: url("/removed"), events: ["artifact.removed", "artifact.held"], allEvents: false, signed: false });
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
    expect(r.output).toMatch(/line 20 "http:\/\/hooks\.example\.com\/plain none": .*must be an https URL/);
  });

  it("with internal addresses not allowed, an endpoint whose name resolves to one is set aside and never sent to", async () => {
    await restartNotifier({
      SVC_WEBHOOK_ALLOW_INTERNAL: "false",
      SVC_WEBHOOK_ENDPOINTS: `${url("/all", "localhost")} none`,
      SVC_WEBHOOK_SECRETS: "",
    });
    const event = await put();
    const [d] = await settled(event.id, 1);
    expect(d).toMatchObject({ endpoint: url("/all", "localhost"), state: "set-aside", attempts: 1, lastStatus: null });
    expect(d!.lastError).toMatch(/^refused: localhost resolves to 127\.0\.0\.1, which is in the loopback range/);
    expect(rx.got("/all", event.id)).toHaveLength(0);
  });
});
