// The audit trail (docs/operations/audit-trail.md): every change made through the API recorded
// with who made it (and the key's label), from which address, what and when; read back through
// GET /api/audit, paged newest first and searched; kept across restarts of the services that
// write and read it; purged by svc.audit-retention; and shown on the console's Audit page in a
// real browser (screenshot under .data/screenshots/audit/).
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { launchChromium, screenshotIn, signInDev } from "./browser.js";
import { freshName, startSuite, type Suite } from "./suite.js";

interface Entry {
  id: string;
  at: string;
  tenant: string;
  actor: { kind: string; id: string; label?: string };
  address: string | null;
  service: string;
  action: string;
  object: string | null;
  method: string;
  path: string;
  status: number;
  detail: unknown;
}

const FROM = "203.0.113.7";
const PERSON_FROM = "198.51.100.23";
const settled = { timeout: 30_000, interval: 500 };

let s: Suite;
let admin: { id: string; key: string };
let reader: { id: string; key: string };
let issued: { id: string };
let repository: string;
let started: number;

beforeAll(async () => {
  // The gateway believes X-Forwarded-For from the test's own address, as from a proxy in front.
  s = await startSuite({ env: { SVC_PROFILE: "dev", SVC_TRUSTED_PROXIES: "127.0.0.1, ::1" } });
  started = Date.now();
  admin = await s.mint({ label: "audit-admin", grants: [{ scope: "*", tokens: ["manage:read", "manage:write", "repository:read", "repository:write"] }] });
  reader = await s.mint({ label: "audit-reader", grants: [{ scope: "*", tokens: ["manage:read"] }] });
});
afterAll(() => s?.stop());

const asAdmin = (method: string, path: string, body?: object) => s.call(method, path, { key: admin.key, body, headers: { "x-forwarded-for": FROM } });

async function audit(query = "", key = reader.key): Promise<{ status: number; entries: Entry[]; next: string | null; body: any }> {
  const res = await s.call("GET", `/api/audit${query}`, { key });
  const body = (await res.json()) as any;
  return { status: res.status, entries: body.entries ?? [], next: res.headers.get("x-next-cursor"), body };
}

describe("the audit trail through the API", () => {
  it("records a key issue, a grant, a repository create and a setting change: actor and label, address, object and time", async () => {
    const before = Date.now();
    const minted = await asAdmin("POST", "/api/credentials", { label: "ci-bot" });
    expect(minted.status).toBe(201);
    issued = (await minted.json()) as { id: string };
    expect((await asAdmin("POST", `/api/credentials/${issued.id}/grants`, { scope: "libs", tokens: ["repository:read"] })).status).toBe(200);
    repository = freshName("audited");
    expect((await asAdmin("POST", "/api/repositories", { name: repository, format: "raw" })).status).toBe(201);
    expect((await asAdmin("PUT", "/api/settings/rate-limit", { value: 5000 })).status).toBe(200);
    // Neither a refused change nor a read is a change.
    expect((await asAdmin("POST", "/api/repositories", { name: "", format: "raw" })).status).toBe(400);
    expect((await asAdmin("GET", "/api/repositories")).status).toBe(200);
    const after = Date.now();

    const { status, entries } = await audit(`?actor=${admin.id}`);
    expect(status).toBe(200);
    expect(entries.map((e) => e.action)).toEqual(["setting.change", "repository.create", "key.grant.set", "key.issue"]);
    for (const e of entries) {
      expect(e.actor).toEqual({ kind: "key", id: admin.id, label: "audit-admin" });
      expect(e.address).toBe(FROM);
      expect(Date.parse(e.at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(e.at)).toBeLessThanOrEqual(after + 1000);
      expect(e.status).toBeGreaterThanOrEqual(200);
      expect(e.status).toBeLessThan(300);
    }
    const [setting, created, grant, issue] = entries as [Entry, Entry, Entry, Entry];
    expect(issue).toMatchObject({ service: "auth", object: issued.id, method: "POST", path: "/api/credentials", detail: { body: { label: "ci-bot" } } });
    expect(grant).toMatchObject({ object: issued.id, detail: { body: { scope: "libs", tokens: ["repository:read"] } } });
    expect(created).toMatchObject({ service: "artifacts", object: repository, detail: { body: { name: repository, format: "raw" } } });
    expect(setting).toMatchObject({ service: "admin", object: "rate-limit", detail: { setting: "rate-limit", value: "5000" } });
    // The issued key's secret is never kept.
    expect(JSON.stringify(entries)).not.toContain("svck_");
  });

  it("names a key by its label in the gateway's access lines and the services' change lines", async () => {
    await vi.waitFor(() => {
      const access = s.output("gateway").filter((l) => l.includes('"category":"access"') && l.includes(`/api/credentials/${issued.id}/grants`));
      expect(access.some((l) => l.includes('"keyLabel":"audit-admin"'))).toBe(true);
      const change = s.output("auth").filter((l) => l.includes("credential grant set") && l.includes(issued.id));
      expect(change.some((l) => l.includes('"keyLabel":"audit-admin"'))).toBe(true);
    }, settled);
  });

  it("keeps a secret setting's value out of the trail", async () => {
    expect((await asAdmin("PUT", "/api/settings/webhook-secrets", { value: "" })).status).toBe(200);
    const [entry] = (await audit("?action=setting.change&q=webhook-secrets")).entries;
    expect(entry).toMatchObject({ object: "webhook-secrets", detail: { setting: "webhook-secrets", value: "[secret]" } });
  });

  it("pages newest first with a cursor and finds entries by actor label, action, text and time", async () => {
    const all = (await audit("?limit=500")).entries;
    expect(all.length).toBeGreaterThanOrEqual(8);
    const ids = all.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);

    const first = await audit("?limit=3");
    expect(first.entries.map((e) => e.id)).toEqual(all.slice(0, 3).map((e) => e.id));
    expect(first.next).toBe(all[2]!.id);
    const second = await audit(`?limit=3&after=${first.next}`);
    expect(second.entries.map((e) => e.id)).toEqual(all.slice(3, 6).map((e) => e.id));
    const last = await audit(`?limit=500&after=${all[all.length - 2]!.id}`);
    expect(last.entries.map((e) => e.id)).toEqual([all[all.length - 1]!.id]);
    expect(last.next).toBeNull();

    // By the key's label (a part of it), by an action's start, by text, by time.
    expect((await audit("?actor=audit-adm")).entries.every((e) => e.actor.label === "audit-admin")).toBe(true);
    const keys = (await audit("?action=key")).entries;
    expect(new Set(keys.map((e) => e.action))).toEqual(new Set(["key.issue", "key.grant.set"]));
    expect((await audit(`?q=${repository}`)).entries.map((e) => e.action)).toEqual(["repository.create"]);
    expect((await audit(`?q=${repository}&until=${encodeURIComponent(new Date(started - 60_000).toISOString())}`)).entries).toEqual([]);
    expect((await audit(`?q=${repository}&since=${encodeURIComponent(new Date(started - 60_000).toISOString())}`)).entries).toHaveLength(1);
    expect((await audit(`?since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`)).entries).toEqual([]);
  });

  it("answers bad input with a 400 problem naming the parameter", async () => {
    for (const [query, field] of [
      ["?limit=0", "limit"],
      ["?limit=lots", "limit"],
      ["?after=abc", "after"],
      ["?since=yesterday", "since"],
      ["?until=2026-13-45", "until"],
      ["?action=Key%20Issue", "action"],
      ["?since=2026-11-02&until=2026-11-01", "until"],
    ] as const) {
      const res = await audit(query);
      expect(res.status, query).toBe(400);
      expect(res.body.detail, query).toContain(field);
    }
    const unknown = await audit("?who=me");
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toContain("who");
  });

  it("is read with manage:read on *: a key without it is refused", async () => {
    const plain = await s.mint({ label: "no-manage", grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await audit("", plain.key)).status).toBe(403);
    expect((await s.call("GET", "/api/audit")).status).toBe(401);
  });

  it("keeps the trail across restarts of the services that write and read it, and records changes after them", async () => {
    const before = (await audit("?limit=500")).entries.map((e) => e.id);
    await s.stopService("auth");
    await s.startService("auth");
    await s.stopService("admin");
    await s.startService("admin");
    await vi.waitFor(async () => expect((await audit("?limit=500")).status).toBe(200), settled);
    expect((await audit("?limit=500")).entries.map((e) => e.id)).toEqual(before);
    await vi.waitFor(async () => expect((await asAdmin("DELETE", `/api/credentials/${issued.id}`)).status).toBe(204), settled);
    const [revoked] = (await audit("?action=key.revoke")).entries;
    expect(revoked).toMatchObject({ object: issued.id, actor: { id: admin.id, label: "audit-admin" }, address: FROM });
  });
});

describe("the console's Audit page", () => {
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    // The browser comes through a proxy in front (the suite's gateway believes it), which names the person's address.
    const context = await browser.newContext({ baseURL: s.gatewayUrl, extraHTTPHeaders: { "x-forwarded-for": PERSON_FROM } });
    page = await signInDev(await context.newPage(), s.gatewayUrl, "admin");
  });
  afterAll(() => browser?.close());

  it("records a change made on a console page as the signed-in person's, from the person's address", async () => {
    expect((await page.goto("/ui/credentials"))?.status()).toBe(200);
    await page.locator("#issue-label").fill("from-console");
    await page.getByRole("button", { name: "Issue key", exact: true }).click();
    await expect.poll(() => page.locator("#issued-heading").count()).toBe(1);
    const [entry] = (await audit("?action=key.issue&q=from-console")).entries;
    expect(entry).toMatchObject({ actor: { kind: "person", id: "dev/admin" }, address: PERSON_FROM, service: "auth", detail: { body: { label: "from-console" } } });
  });

  it("lists the trail newest first, searches it with the API's filters and pages through it", async () => {
    expect((await page.goto("/ui/audit"))?.status()).toBe(200);
    expect(await page.locator("nav a[aria-current=page]").textContent()).toBe("Audit");
    const rows = page.locator("#audit-entries tbody tr");
    expect(await rows.count()).toBeGreaterThanOrEqual(8);
    expect(await rows.first().textContent()).toContain("key.issue");
    expect(await rows.first().textContent()).toContain(PERSON_FROM);
    await screenshotIn("audit", page, "audit-page");

    await page.getByLabel("Action").fill("repository");
    await page.getByLabel("Text").fill(repository);
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/action=repository/);
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain("repository.create");
    expect(await rows.first().textContent()).toContain("audit-admin");
    expect(await rows.first().textContent()).toContain(FROM);
    await screenshotIn("audit", page, "audit-filtered");

    // Paged: ten at a time, the next page carrying on where the first ended.
    await page.goto("/ui/audit?limit=10");
    const firstPage = await rows.allTextContents();
    expect(firstPage).toHaveLength(10);
    await page.getByRole("link", { name: "Next entries" }).click();
    const secondPage = await rows.allTextContents();
    expect(secondPage.length).toBeGreaterThan(0);
    expect(secondPage.some((r) => firstPage.includes(r))).toBe(false);

    // A filter the API cannot read is said beside the form.
    await page.goto("/ui/audit?since=yesterday");
    expect(await page.locator("#audit-refused").textContent()).toContain("since");
  });
});

describe("retention", () => {
  it("purges entries older than svc.audit-retention, changed at run time", async () => {
    expect((await asAdmin("PUT", "/api/settings/audit-retention", { value: "2s" })).status).toBe(200);
    const old = (await audit(`?q=${repository}`)).entries;
    expect(old).toHaveLength(1);
    // The purge runs soon after an admin node starts, then every hour.
    await s.stopService("admin");
    await s.startService("admin");
    await vi.waitFor(async () => expect((await audit(`?q=${repository}`)).entries).toEqual([]), { timeout: 60_000, interval: 1000 });
  });
});
