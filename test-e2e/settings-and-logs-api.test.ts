import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startSuite, type Suite } from "./suite.js";

type NodeValue = { node: string; service: string; from: string; set: boolean; value?: string };
type Row = { name: string; environment: string; secret: boolean; agree: boolean; readBy: string[]; nodes: NodeValue[] };
type Table = { nodes: { node: string; service: string }[]; settings: Row[] };
type LogPage = { entries: { node: string; service: string; msg: string }[]; next: string };

const settled = { timeout: 20_000, interval: 300 };
const SERVICES = ["admin", "artifacts", "auth", "gateway", "notifier", "walker"];

describe("GET /api/settings and the logs' service filter", () => {
  let s: Suite;
  let reader: { key: string };
  const file = join(mkdtempSync(join(tmpdir(), "svc-settings-")), "svc.properties");

  beforeAll(async () => {
    writeFileSync(file, "svc.webhook-attempts=3\n");
    s = await startSuite({ env: { SVC_CONFIG_FILE: file, SVC_CACHE_TTL: "2m" }, args: ["-Dsvc.rate-limit=5000"] });
    reader = await s.mint({ grants: [{ scope: "*", tokens: ["manage:read"] }] });
  });
  afterAll(() => s?.stop());

  const table = async (key = reader.key): Promise<Table> => {
    const res = await s.call("GET", "/api/settings", { key });
    expect(res.status).toBe(200);
    return (await res.json()) as Table;
  };
  const everyNode = () => vi.waitUntil(async () => table().then((t) => SERVICES.every((sv) => t.nodes.some((n) => n.service === sv)) && t), settled);
  const row = (t: Table, name: string) => t.settings.find((r) => r.name === name)!;

  it("shows each node's value and where it came from: default, environment, -D or file", async () => {
    const t = await everyNode();
    expect(row(t, "svc.cache.ttl")).toMatchObject({ agree: true, environment: "SVC_CACHE_TTL" });
    expect(row(t, "svc.cache.ttl").nodes).toEqual([expect.objectContaining({ service: "gateway", from: "environment", value: "2m" })]);
    const rate = row(t, "svc.rate-limit");
    expect(rate.nodes.map((n) => n.service).sort()).toEqual(["admin", "gateway"]);
    expect(rate.nodes.every((n) => n.from === "-D" && n.value === "5000")).toBe(true);
    expect(row(t, "svc.webhook-attempts").nodes).toEqual([expect.objectContaining({ service: "notifier", from: "file", value: "3" })]);
    expect(row(t, "svc.read-only").nodes.every((n) => n.from === "default" && n.value === "false")).toBe(true);
    // Every service reads the log level: one entry per node (the console too, where it runs).
    expect(row(t, "svc.log-level").nodes.map((n) => n.service).sort()).toEqual(expect.arrayContaining(SERVICES));
    expect(row(t, "svc.log-level").nodes).toHaveLength(t.nodes.length);
  });

  it("shows secrets only as set or not set: no secret's value anywhere in the answer", async () => {
    const t = await everyNode();
    const secret = row(t, "svc.internal-secret");
    expect(secret.secret).toBe(true);
    expect(secret.agree).toBe(true);
    expect(secret.nodes.every((n) => n.set && n.value === undefined)).toBe(true);
    expect(row(t, "svc.database-url").nodes.every((n) => n.set && n.value === undefined)).toBe(true);
    const text = JSON.stringify(t);
    expect(text).not.toContain(s.internalSecret);
    expect(text).not.toContain(s.bootstrapKey);
    expect(text).not.toContain(new URL(s.databaseUrl).password || "(no password)");
  });

  it("says when the nodes reading a setting disagree", async () => {
    const odd = await s.startGateway({ SVC_READ_ONLY: "true" });
    try {
      // A gathering leaves out a node that takes over 2 s to answer (a busy machine, a process
      // starting beside it): wait for a table in which both gateways answered.
      const bothGateways = (x: Table) => x.nodes.filter((n) => n.service === "gateway").length === 2 && SERVICES.every((sv) => x.nodes.some((n) => n.service === sv));
      const t = await vi.waitUntil(async () => table().then((x) => row(x, "svc.read-only").nodes.some((n) => n.from === "environment") && bothGateways(x) && x), settled);
      const r = row(t, "svc.read-only");
      expect(r.agree).toBe(false);
      // Read by the gateways, artifacts, walker and admin: the new gateway alone differs.
      expect(r.nodes.filter((n) => n.value === "true")).toEqual([expect.objectContaining({ service: "gateway", from: "environment" })]);
      expect(r.nodes.filter((n) => n.value === "false").map((n) => n.service).sort()).toEqual(["admin", "artifacts", "gateway", "walker"]);
      expect(row(t, "svc.tenant").agree).toBe(true);
    } finally {
      await odd.stop();
    }
  });

  it("needs manage:read over *", async () => {
    const deploy = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect((await s.call("GET", "/api/settings", { key: deploy.key })).status).toBe(403);
    expect((await s.call("GET", "/api/settings")).status).toBe(401);
  });

  it("filters /api/logs by service, one or several, and refuses a malformed one", async () => {
    const logs = async (q: string) => {
      const res = await s.call("GET", `/api/logs?limit=1000&${q}`, { key: reader.key });
      expect(res.status).toBe(200);
      return (await res.json()) as LogPage;
    };
    // Every service has logged its ready line; wait until each one's entries are there.
    await vi.waitUntil(async () => logs("").then((p) => SERVICES.every((sv) => p.entries.some((e) => e.service === sv))), settled);
    const walker = await logs("service=walker");
    expect(walker.entries.length).toBeGreaterThan(0);
    expect(new Set(walker.entries.map((e) => e.service))).toEqual(new Set(["walker"]));
    const two = await logs("service=auth,walker");
    expect(new Set(two.entries.map((e) => e.service))).toEqual(new Set(["auth", "walker"]));
    // Following with the cursor keeps the filter's answer to that service.
    const next = await logs(`service=walker&after=${walker.next}`);
    expect(next.entries.every((e) => e.service === "walker")).toBe(true);
    const bad = await s.call("GET", "/api/logs?service=Not%20a%20service", { key: reader.key });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("service");
  });

  it("are described in the OpenAPI document", async () => {
    const doc = (await (await s.call("GET", "/api/openapi.json", { key: reader.key })).json()) as {
      paths: Record<string, Record<string, { parameters?: { name: string }[]; responses: Record<string, unknown> }>>;
    };
    expect(doc.paths["/api/settings"]?.get?.responses).toHaveProperty("200");
    expect(doc.paths["/api/logs"]?.get?.parameters?.map((p) => p.name)).toContain("service");
  });
});
