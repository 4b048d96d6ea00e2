import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startSuite, type Suite } from "./suite.js";
import { verifyWebhook } from "./webhooks-harness.js";

type Row = { name: string; runtime?: boolean; value?: string; fixed?: boolean; fixedAt?: string; set?: boolean; tenants?: { tenant: string; value: string }[]; nodes: { from: string; value?: string }[] };
type Change = { id: string; name: string; oldValue: string | null; newValue: string | null; tenant?: string; principal: string; at: string };

const settled = { timeout: 20_000, interval: 250 };

describe("settings that change at run time", () => {
  let s: Suite;
  let writer: { id: string; key: string };
  let reader: { id: string; key: string };

  beforeAll(async () => {
    // vulnerability-action is fixed by the operator at start: it wins over a run-time change. The
    // dev profile gives a console session to sign in with (dev/admin).
    s = await startSuite({ env: { SVC_VULNERABILITY_ACTION: "WARN", SVC_PROFILE: "dev" } });
    writer = await s.mint({ label: "settings-writer", grants: [{ scope: "*", tokens: ["manage:read", "manage:write", "repository:read"] }] });
    reader = await s.mint({ label: "settings-reader", grants: [{ scope: "*", tokens: ["manage:read"] }] });
  });
  afterAll(() => s?.stop());

  const row = async (name: string): Promise<Row> => {
    const res = await s.call("GET", "/api/settings", { key: reader.key });
    expect(res.status).toBe(200);
    const found = ((await res.json()) as { settings: Row[] }).settings.find((r) => r.name === name);
    if (!found) throw new Error(`no row ${name}`);
    return found;
  };
  const put = (name: string, value: unknown, key = writer.key) => s.call("PUT", `/api/settings/${name}`, { key, body: { value } });
  const advisories = async (): Promise<string[]> => {
    const res = await s.call("GET", "/api/posture", { key: reader.key });
    expect(res.status).toBe(200);
    return ((await res.json()) as { advisories: { name: string }[] }).advisories.map((a) => a.name);
  };

  it("shows each run-time setting's live value and whether the operator fixed it", async () => {
    expect(await row("svc.rate-limit")).toMatchObject({ runtime: true, value: "6000", fixed: false });
    const fixed = await row("svc.vulnerability-action");
    expect(fixed).toMatchObject({ runtime: true, value: "WARN", fixed: true });
    expect(fixed.fixedAt).toContain("SVC_VULNERABILITY_ACTION");
    // A setting read at start only gains neither.
    expect(await row("svc.read-only")).not.toHaveProperty("fixed");
  });

  it("refuses a fixed setting with 409 saying where it is fixed", async () => {
    const res = await put("vulnerability-action", "BLOCK");
    expect(res.status).toBe(409);
    expect(((await res.json()) as { detail: string }).detail).toContain("environment SVC_VULNERABILITY_ACTION");
    expect((await row("svc.vulnerability-action")).value).toBe("WARN");
  });

  it("refuses a bad value with 400 naming the reason and changes nothing; an unknown name is 404, a start-only one 400", async () => {
    const bad = await put("malware-action", "SOMETIMES");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: string }).detail).toContain("must be one of BLOCK, HOLD, WARN, ALLOW");
    expect((await put("rate-limit", "-3")).status).toBe(400);
    expect((await row("svc.malware-action")).value).toBe("BLOCK");
    expect((await row("svc.rate-limit")).value).toBe("6000");
    expect((await put("no-such-setting", "1")).status).toBe(404);
    const startOnly = await put("read-only", true);
    expect(startOnly.status).toBe(400);
    expect(((await startOnly.json()) as { detail: string }).detail).toContain("cannot be changed at run time");
    // manage:read is not enough.
    expect((await put("malware-action", "WARN", reader.key)).status).toBe(403);
    expect((await row("svc.malware-action")).value).toBe("BLOCK");
  });

  it("applies a live malware-action change to the posture, records it, and a node started later reads it back", async () => {
    expect(await advisories()).not.toContain("svc.malware.allow");
    const res = await put("malware-action", "allow");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ name: "svc.malware-action", value: "ALLOW", previous: "BLOCK" });
    expect((await row("svc.malware-action")).value).toBe("ALLOW");
    expect(await advisories()).toContain("svc.malware.allow");

    const listed = await s.call("GET", "/api/settings/changes", { key: reader.key });
    expect(listed.status).toBe(200);
    const changes = ((await listed.json()) as { changes: Change[] }).changes;
    expect(changes[0]).toMatchObject({ name: "svc.malware-action", oldValue: "BLOCK", newValue: "ALLOW" });
    expect(changes[0]!.principal).toContain(writer.id);
    expect(Number.isNaN(Date.parse(changes[0]!.at))).toBe(false);
    // Refused changes were not recorded.
    expect(changes.filter((c) => c.name === "svc.vulnerability-action")).toEqual([]);

    // A restarted admin node starts with the stored value.
    await s.stopService("admin");
    await s.startService("admin");
    await vi.waitFor(async () => expect(await advisories()).toContain("svc.malware.allow"), settled);
    expect((await row("svc.malware-action")).value).toBe("ALLOW");
  });

  const changes = async (): Promise<{ text: string; changes: Change[] }> => {
    const res = await s.call("GET", "/api/settings/changes", { key: reader.key });
    expect(res.status).toBe(200);
    const text = await res.text();
    return { text, changes: (JSON.parse(text) as { changes: Change[] }).changes };
  };
  const detail = async (res: Response) => ((await res.json()) as { detail: string }).detail;

  it("changes the webhook settings at run time: a bad list is refused with the reason, an endpoint added receives the next event signed with a secret never shown", async () => {
    const received: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    try {
      // The path stands for a receiver's token (Slack, Teams): it is never shown either.
      const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook-tok3n`;
      const secret = `whsec_${randomBytes(24).toString("base64")}`;

      // Checked as the notifier checks them at start: plain http on loopback needs allow-internal.
      const refused = await put("webhook-endpoints", `${endpoint} published`);
      expect(refused.status).toBe(400);
      expect(await detail(refused)).toContain("must be an https URL (http only with svc.webhook-allow-internal=true)");
      const unknown = await put("webhook-endpoints", "https://hooks.example/x pubished");
      expect(unknown.status).toBe(400);
      expect(await detail(unknown)).toContain('unknown event "pubished"');
      expect((await row("svc.webhook-endpoints")).value).toBe("");

      expect((await put("webhook-allow-internal", true)).status).toBe(200);
      const listed = await put("webhook-endpoints", `${endpoint} published`);
      expect(listed.status).toBe(200);
      expect(JSON.stringify(await listed.json())).not.toContain("tok3n");
      const signed = await put("webhook-secrets", `${endpoint} ${secret}`);
      expect(signed.status).toBe(200);
      expect(await signed.json()).toEqual({ name: "svc.webhook-secrets" });
      expect((await put("webhook", true)).status).toBe(200);

      // Every notifier follows: the webhooks API lists the endpoint, signed, without a restart.
      await vi.waitFor(async () => {
        const res = await s.call("GET", "/api/webhooks/endpoints", { key: reader.key });
        expect(await res.json()).toEqual([expect.objectContaining({ signed: true, events: ["artifact.published"] })]);
      }, settled);
      expect((await s.call("PUT", "/repository/default/hooked/one.txt", { key: s.bootstrapKey, body: "one" })).status).toBe(201);
      await vi.waitFor(() => expect(received.some((r) => r.body.includes("hooked/one.txt"))).toBe(true), settled);
      const delivery = received.find((r) => r.body.includes("hooked/one.txt"))!;
      expect(verifyWebhook(secret, delivery.headers, delivery.body)).toBe(true);

      // The secret is shown only as set, the endpoint's token nowhere; the change list keeps neither.
      const table = await (await s.call("GET", "/api/settings", { key: reader.key })).text();
      expect(table).not.toContain(secret.slice(6));
      expect(table).not.toContain("tok3n");
      const secretRow = await row("svc.webhook-secrets");
      expect(secretRow).toMatchObject({ runtime: true, set: true, fixed: false });
      expect(secretRow).not.toHaveProperty("value");
      const history = await changes();
      expect(history.text).not.toContain(secret.slice(6));
      expect(history.text).not.toContain("tok3n");
      expect(history.changes.find((c) => c.name === "svc.webhook-secrets")).toMatchObject({ oldValue: null, newValue: null });
    } finally {
      await put("webhook", false);
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
  });

  it("sets a gate setting for a tenant: shown, recorded, and its advisory raised naming the tenant", async () => {
    expect(await advisories()).not.toContain("svc.deny-list.allow");
    const res = await s.call("PUT", "/api/settings/deny-list-action?tenant=default", { key: writer.key, body: { value: "ALLOW" } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ name: "svc.deny-list-action", tenant: "default", value: "ALLOW", previous: "BLOCK" });
    expect(await row("svc.deny-list-action")).toMatchObject({ value: "BLOCK", tenants: [{ tenant: "default", value: "ALLOW" }] });
    const posture = (await (await s.call("GET", "/api/posture", { key: reader.key })).json()) as { advisories: { name: string; summary: string }[] };
    expect(posture.advisories.find((a) => a.name === "svc.deny-list.allow")?.summary).toContain("tenant default");
    expect((await changes()).changes[0]).toMatchObject({ name: "svc.deny-list-action", tenant: "default", oldValue: "BLOCK", newValue: "ALLOW" });

    // A tenant not served here, or a setting not set for a tenant, is refused with the reason.
    const other = await s.call("PUT", "/api/settings/deny-list-action?tenant=elsewhere", { key: writer.key, body: { value: "ALLOW" } });
    expect(other.status).toBe(400);
    expect(await detail(other)).toContain('serves tenant "default" only');
    const notPerTenant = await s.call("PUT", "/api/settings/webhook?tenant=default", { key: writer.key, body: { value: true } });
    expect(notPerTenant.status).toBe(400);
    expect(await detail(notPerTenant)).toContain("has no per-tenant value");

    expect((await s.call("DELETE", "/api/settings/deny-list-action?tenant=default", { key: writer.key })).status).toBe(204);
    expect(await advisories()).not.toContain("svc.deny-list.allow");
    expect((await row("svc.deny-list-action")).tenants).toEqual([]);
  });

  it("switches the console's Deploy on at run time: a console session may then deploy, through a second gateway too", async () => {
    const other = await s.startGateway();
    try {
      // Signed in with the dev form as a browser would; the session's anti-forgery token from a page.
      const html = { accept: "text/html" };
      const signIn = await s.call("GET", "/login/dev", { headers: html });
      const token = /svc_signin=([^;]+)/.exec(signIn.headers.getSetCookie().join("\n"))![1]!;
      const done = await fetch(`${s.gatewayUrl}/login/dev`, {
        method: "POST",
        redirect: "manual",
        headers: { ...html, cookie: `svc_signin=${token}`, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: token, username: "admin", password: "admin" }).toString(),
      });
      expect(done.status).toBe(303);
      const cookie = `svc_session=${/svc_session=([^;]+)/.exec(done.headers.getSetCookie().join("\n"))![1]!}`;
      const page = async (path: string) => (await fetch(`${s.gatewayUrl}${path}`, { headers: { ...html, cookie } })).text();
      const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(await page("/ui/posture"))![1]!;
      const deploy = (base: string, path: string) => fetch(`${base}/repository/default/${path}`, { method: "PUT", headers: { cookie, "x-svc-csrf": csrf }, body: "from the console" });

      expect((await deploy(other.url, "deployed/off.txt")).status).toBe(403);
      expect(await page("/ui/repositories/default")).not.toContain('id="deploy-form"');
      expect(await page("/ui/settings")).toMatch(/<tr id="module-deploy">.*<strong>off<\/strong>/s);

      const res = await put("ui.deploy", true);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ name: "svc.ui.deploy", value: "true", previous: "false" });
      // Gateway B heard it without a restart, as did the console.
      await vi.waitFor(async () => expect((await deploy(other.url, "deployed/on.txt")).status).toBe(201), settled);
      expect((await deploy(s.gatewayUrl, "deployed/on-a.txt")).status).toBe(201);
      expect(await (await s.call("GET", "/repository/default/deployed/on.txt", { key: s.bootstrapKey })).text()).toBe("from the console");
      await vi.waitFor(async () => expect(await page("/ui/repositories/default")).toContain('id="deploy-form"'), settled);
      expect(await page("/ui/settings")).toMatch(/<tr id="module-deploy">.*<strong>on<\/strong>/s);
    } finally {
      await other.stop();
    }
  });

  it("changes what a second gateway enforces without a restart", async () => {
    const other = await s.startGateway();
    try {
      const burst = async (n: number) => {
        const statuses: number[] = [];
        for (let i = 0; i < n; i++) statuses.push((await fetch(`${other.url}/repository/default/none`, { headers: { "service-repository-key": writer.key } })).status);
        return statuses;
      };
      expect(await burst(10)).toEqual(Array(10).fill(404));
      const res = await put("rate-limit", 5);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ value: "5", previous: "6000" });
      // 5 a minute, plus an administrator's reserve the key does not have: the burst runs dry.
      await vi.waitFor(async () => expect(await burst(20)).toContain(429), settled);
    } finally {
      await other.stop();
    }
  });
});
