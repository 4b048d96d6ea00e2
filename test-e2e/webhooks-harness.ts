// The webhook e2e files' shared harness: a real HTTPS receiver, a suite whose notifier delivers to
// it, and the calls the tests make (publish an event, list deliveries, restart the notifier).
// Each test file that calls useWebhookSuite() gets its own tenant, receiver and suite.
import { execFileSync } from "node:child_process";
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject } from "vitest";
import type { DeliveryView } from "@svc/contracts";
import { createBus, createLogger, identityHeaders, type Bus } from "@svc/kit";
import { keyId } from "@svc/keys";
import { startSuite, type Suite } from "./suite.js";

/** The receiver's check, as docs/integration/webhook-receivers.md gives it. */
export function verifyWebhook(secret: string, headers: Record<string, string | string[] | undefined>, body: string): boolean {
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

export type Delivery = DeliveryView;

/** Polls until `check` returns a value that is not undefined; no timing is asserted. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const tenant = `wh-${randomBytes(4).toString("hex")}`;
export const ALL_SECRET = `whsec_${randomBytes(32).toString("base64")}`;
export const PUBLISHED_SECRET = `plain-${randomBytes(12).toString("hex")}`;

export let s: Suite;
export let rx: Receiver;
export let bus: Bus;
let viaGateway = false;
export let url: (path: string, host?: string) => string;

/** The notifier's API: through the gateway once it routes /api/webhooks, else signed like the gateway would. */
export async function api(method: string, path: string, body?: unknown): Promise<Response> {
  if (viaGateway) return s.call(method, path, { key: s.bootstrapKey, body: body as object | undefined });
  const json = body === undefined ? undefined : JSON.stringify(body);
  const send = json === undefined ? {} : { body: json, headers: { "content-type": "application/json" } };
  const headers = identityHeaders(s.internalSecret, method, path, `key:${tenant}:${keyId(s.bootstrapKey)}`, Date.now(), send);
  return fetch(`${s.urls.notifier}${path}`, { method, headers, body: json });
}

export async function deliveries(query: string): Promise<Delivery[]> {
  const res = await api("GET", `/api/webhooks/deliveries?${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Delivery[];
}

/** Waits until the event has exactly `count` deliveries and none is pending. */
export const settled = (eventId: string, count: number) =>
  eventually(`the deliveries of ${eventId} to settle`, async () => {
    const list = await deliveries(`event=${eventId}`);
    return list.length === count && list.every((d) => d.state !== "pending") ? list : undefined;
  });

export type Kind = "artifact.published" | "artifact.removed" | "artifact.held" | "artifact.released" | "artifact.finding";

/** A well-formed event of the catalog, as the artifacts service publishes it. */
export function eventOf(kind: Kind, path: string): Record<string, unknown> {
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

export async function publish(kind: Kind, path = `files/${randomUUID()}.txt`): Promise<Record<string, unknown> & { id: string }> {
  const event = eventOf(kind, path) as Record<string, unknown> & { id: string };
  expect(await bus.publish(kind, event as never)).toBe(true);
  return event;
}

/** Artifact events seen on the tenant's subjects, by kind and path: what the artifacts service published. */
const onBus = new Map<string, Record<string, unknown> & { id: string }>();
/** Whether a PUT through the gateway publishes events (the artifacts service's outbox); probed once. */
let realPublishes = false;

/** A publish: a real PUT through the gateway when the artifacts service publishes events, else the same event put on the stream here. */
export async function put(path = `files/${randomUUID()}.txt`): Promise<Record<string, unknown> & { id: string }> {
  if (!realPublishes) return publish("artifact.published", path);
  const res = await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body: `content of ${path}` });
  expect(res.status).toBeLessThan(300);
  return eventually(`the event of PUT ${path}`, () => onBus.get(`artifact.published ${path}`));
}

/** A removal: a real DELETE through the gateway when events are published, else one put on the stream here. */
export async function remove(path = `files/${randomUUID()}.txt`): Promise<Record<string, unknown> & { id: string }> {
  if (!realPublishes) return publish("artifact.removed", path);
  await put(path);
  expect((await s.call("DELETE", `/repository/default/${path}`, { key: s.bootstrapKey })).status).toBe(204);
  return eventually(`the event of DELETE ${path}`, () => onBus.get(`artifact.removed ${path}`));
}

const consumingLines = () => s.output("notifier").filter((l) => l.includes("consuming artifact events")).length;

export async function restartNotifier(env?: Record<string, string | undefined>): Promise<void> {
  const before = consumingLines();
  await s.stopService("notifier");
  await s.startService("notifier", env);
  await eventually("the notifier to consume again", () => (consumingLines() > before ? true : undefined));
}

/** One suite per test file: an HTTPS receiver, the services with six endpoints on it, a NATS link of the test's own. */
export function useWebhookSuite(): void {
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
    bus = createBus({ url: s.natsUrl, tenant, name: "webhooks-test", log });
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
}
