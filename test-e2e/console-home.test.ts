// The console's home page and the Metrics page's charts in a real browser (Debian's Chromium
// through playwright-core), signed in with the dev profile's accounts: the deployment at a glance
// after some requests, a few 5xx answers and a publish; the charts drawn from the admin service's
// own samples (every 2 s here, svc.metrics.sample-interval), kept across a restart of the admin
// service and taken once per slot by two admin nodes. Screenshots under the test data folder.
import { hostname } from "node:os";
import pg from "pg";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, screenshotIn, signInDev } from "./browser.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let browser: Browser;
let admin: Page;
let viewer: Page;
let db: pg.Client;
/** What the console refused to load or run under its Content-Security-Policy, as Chromium reports it. */
const refusedByPolicy: string[] = [];

const INTERVAL_MS = 2_000;
const PUBLISHED = "home/hello.txt";

interface Series {
  points: { time: string; requests: number; errors: number; latencyMs: number | null; p95Ms: number | null; storageBytes: number | null }[];
  totals: { requests: number; errors: number };
}

const samples = async () => (await db.query<{ slot: Date; taken_by: string }>("select slot, taken_by from admin.meter_samples order by slot")).rows;
const series = async (): Promise<Series> => (await s.call("GET", "/api/metrics/series?window=1h", { key: s.bootstrapKey })).json() as Promise<Series>;
const adminNode = (pid: number | undefined) => `admin@${hostname()}:${pid}`;

beforeAll(async () => {
  s = await startSuite({ env: { SVC_PROFILE: "dev", SVC_METRICS_SAMPLE_INTERVAL: `${INTERVAL_MS / 1000}s` } });
  db = new pg.Client({ connectionString: s.databaseUrl });
  await db.connect();
  browser = await launchChromium();
  const page = async () => {
    const p = await (await browser.newContext({ baseURL: s.gatewayUrl })).newPage();
    p.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) refusedByPolicy.push(m.text());
    });
    return p;
  };
  admin = await signInDev(await page(), s.gatewayUrl, "admin");
  viewer = await signInDev(await page(), s.gatewayUrl, "viewer");
});
afterAll(async () => {
  await db?.end();
  await browser?.close();
  await s?.stop();
});

describe("the home page", () => {
  it("shows the deployment after some requests, a few failures and a publish: counts, the publish, charts with points", async () => {
    expect((await s.call("PUT", `/repository/default/${PUBLISHED}`, { key: s.bootstrapKey, body: "hello, home page" })).status).toBe(201);
    for (let i = 0; i < 5; i++) expect((await s.call("GET", `/repository/default/${PUBLISHED}`, { key: s.bootstrapKey })).status).toBe(200);
    // The walker down: the gateway answers its routes with a 5xx, which the error rate counts.
    await s.stopService("walker");
    for (let i = 0; i < 3; i++) expect((await s.call("GET", "/api/walks", { key: s.bootstrapKey })).status).toBeGreaterThanOrEqual(500);
    await s.mint({ label: "expiring soon bot", expires: new Date(Date.now() + 3 * 86_400_000).toISOString() });

    // Samples come every 2 s: the page shown again until they have counted the failures.
    const glance = async () => {
      await admin.goto("/ui/");
      const hour = await admin.locator("#traffic tbody tr", { hasText: "Last hour" }).locator("td").allInnerTexts();
      return { failuresCounted: Number(hour[1] ?? 0) >= 3, publishes: await admin.locator("#recent-publishes").count() };
    };
    await expect.poll(glance, { timeout: 60_000, interval: 1_000 }).toEqual({ failuresCounted: true, publishes: 1 });

    const hour = await admin.locator("#traffic tbody tr", { hasText: "Last hour" }).locator("td").allInnerTexts();
    expect(Number(hour[0])).toBeGreaterThanOrEqual(9);
    expect(await admin.locator("#recent-publishes tbody tr").first().innerText()).toMatch(/default\s+home\/hello\.txt\s+16 bytes\s+key:[0-9a-f]{64}/);
    expect(await admin.locator("#home-repositories tr", { hasText: "default" }).locator("td").allInnerTexts()).toEqual(["raw", "hosted", "1", "16 bytes"]);
    expect(await admin.locator("#storage-used").innerText()).toContain("16 bytes used by 1 repository");
    expect(await admin.locator("#expiring").innerText()).toContain("“expiring soon bot”");
    expect(await admin.locator("#nodes").innerText()).toContain("gateway@");
    // The dev profile raises an advisory at least.
    expect(Number(await admin.locator("#advisory-count strong").innerText())).toBeGreaterThan(0);
    for (const chart of ["home-requests", "home-errors", "home-latency", "home-p95", "home-storage"]) {
      expect(await admin.locator(`#${chart} svg circle.point`).count(), chart).toBeGreaterThan(0);
      expect(await admin.locator(`#${chart} svg`).getAttribute("role")).toBe("img");
    }
    expect(await admin.locator("#home-errors figcaption").innerText()).toMatch(/^Error rate \(5xx answers\) Latest [\d.]+ %/);
    expect(await admin.locator("#home-p95 figcaption").innerText()).toMatch(/^Latency, 95th percentile Latest [\d.]+ ms/);
    // Each part leads to its page.
    const links = await admin.locator("section.glance h2 a").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
    expect(links).toEqual(["/ui/posture", "/ui/metrics", "/ui/repositories", "/ui/repositories", "/ui/credentials?expiring=soon", "/ui/metrics"]);
    await screenshotIn("console-home", admin, "home");
    await admin.locator("#recent-publishes").getByRole("link", { name: "default" }).click();
    await admin.waitForURL(/\/ui\/repositories\/default$/);
    expect(refusedByPolicy).toEqual([]);
  });

  it("is the same for a viewer (manage:read), who is offered no form", async () => {
    await viewer.goto("/ui/");
    for (const part of ["#charts", "#repositories-glance", "#publishes", "#expiring-keys", "#nodes-glance", "#advisories-glance"]) expect(await viewer.locator(part).count(), part).toBe(1);
    expect(await viewer.locator("#recent-publishes").innerText()).toContain(PUBLISHED);
    expect(await viewer.locator('main form[method="post"]').count()).toBe(0);
    await screenshotIn("console-home", viewer, "home-viewer");
  });

  it("is the no-access screen for a person holding nothing", async () => {
    expect((await s.call("DELETE", `/api/principals/grants?id=dev/viewer&scope=${encodeURIComponent("*")}`, { key: s.bootstrapKey })).status).toBe(204);
    await expect.poll(async () => (await viewer.goto("/ui/"), await viewer.locator("h1").innerText()), { timeout: 30_000, interval: 500 }).toBe("No access yet");
    expect(await viewer.locator("#charts, #recent-publishes, #nodes").count()).toBe(0);
    expect(await viewer.locator('nav[aria-label="Console pages"]').count()).toBe(0);
  });
});

describe("the Metrics page", () => {
  it("shows the charts and leads to the raw table of every meter", async () => {
    await admin.goto("/ui/metrics");
    expect(await admin.locator("#metrics-requests svg circle.point").count()).toBeGreaterThan(0);
    expect(await admin.locator("#metrics-storage figcaption").innerText()).toContain("16 bytes");
    expect(await admin.locator("#meters").count()).toBe(0);
    await screenshotIn("console-home", admin, "metrics");
    await Promise.all([admin.waitForURL(/\/ui\/metrics\/raw$/), admin.click("#raw-link")]);
    expect(await admin.locator("#meters tbody").innerText()).toContain("svc_http_requests_total");
    await admin.getByRole("link", { name: "Back to the charts and health checks" }).click();
    await admin.waitForURL(/\/ui\/metrics$/);
    // The last day, by the quarter hour: the point of this quarter.
    await admin.getByRole("link", { name: "the last day" }).click();
    await admin.waitForURL(/window=24h/);
    expect(await admin.locator("#metrics-requests svg circle.point").count()).toBeGreaterThan(0);
    expect(refusedByPolicy).toEqual([]);
  });
});

describe("the samples", () => {
  it("are taken once per slot by two admin nodes, by either alone, and survive a restart of the admin service", async () => {
    const first = (await samples())[0]!;
    const original = adminNode(s.pid("admin"));
    const replica = await s.startReplica("admin");
    try {
      const since = Date.now();
      await expect.poll(async () => (await samples()).filter((r) => r.slot.getTime() >= since).length, { timeout: 60_000, interval: 1_000 }).toBeGreaterThanOrEqual(4);
      // The original stopped: the replica samples alone.
      await s.stopService("admin");
      const alone = Date.now();
      await expect
        .poll(async () => (await samples()).filter((r) => r.slot.getTime() > alone && r.taken_by === adminNode(replica.pid)).length, { timeout: 60_000, interval: 1_000 })
        .toBeGreaterThanOrEqual(2);
    } finally {
      await replica.stop();
    }
    const rows = await samples();
    expect(new Set(rows.map((r) => r.slot.getTime())).size).toBe(rows.length);
    expect(new Set(rows.map((r) => r.taken_by))).toEqual(new Set([original, adminNode(replica.pid)]));

    // Every admin node down, then started again: what was sampled before is still there.
    await s.startService("admin");
    expect((await samples())[0]).toEqual(first);
    const after = await series();
    expect(Date.parse(after.points[0]!.time)).toBeLessThanOrEqual(first.slot.getTime());
    expect(after.totals.errors).toBeGreaterThanOrEqual(3);
    await admin.goto("/ui/");
    expect(await admin.locator("#recent-publishes").innerText()).toContain(PUBLISHED);
  });
});
