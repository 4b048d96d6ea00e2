import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startSuite, type Suite } from "./suite.js";

type Row = { name: string; runtime?: boolean; value?: string; fixed?: boolean; fixedAt?: string; nodes: { from: string; value?: string }[] };
type Change = { id: string; name: string; oldValue: string | null; newValue: string | null; principal: string; at: string };

const settled = { timeout: 20_000, interval: 250 };

describe("settings that change at run time", () => {
  let s: Suite;
  let writer: { id: string; key: string };
  let reader: { id: string; key: string };

  beforeAll(async () => {
    // vulnerability-action is fixed by the operator at start: it wins over a run-time change.
    s = await startSuite({ env: { SVC_VULNERABILITY_ACTION: "WARN" } });
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
