import { describe, expect, it } from "vitest";
import { overlayRuntime, overlayTenant, parseRuntimeValue, tenantOverridesOf } from "./live-settings-follower.js";
import { loadSettings } from "./settings.js";

const SECRET = "s".repeat(32);
const start = (env: Record<string, string> = {}) => loadSettings({ argv: [], env: { SVC_INTERNAL_SECRET: SECRET, ...env } });

describe("run-time settings", () => {
  it("reads a value with the catalog's own parser", () => {
    expect(parseRuntimeValue("rateLimit", 5)).toEqual({ ok: true, value: 5, text: "5" });
    expect(parseRuntimeValue("malwareAction", "allow")).toEqual({ ok: true, value: "ALLOW", text: "ALLOW" });
    expect(parseRuntimeValue("blockPrivateImportHosts", false)).toEqual({ ok: true, value: false, text: "false" });
    expect(parseRuntimeValue("rateLimit", "-1")).toEqual({ ok: false, reason: "svc.rate-limit must be a whole number (0 or more)" });
    expect(parseRuntimeValue("vulnerabilityThreshold", "SOME")).toMatchObject({ ok: false, reason: expect.stringContaining("CRITICAL, HIGH, MEDIUM, LOW, NONE") });
    expect(parseRuntimeValue("rateLimit", { n: 5 })).toMatchObject({ ok: false });
  });

  it("stores a duration as written, so it reads back as the same duration (not its milliseconds read as seconds)", () => {
    const put = parseRuntimeValue("webhookRetryBaseMs", "30s");
    expect(put).toEqual({ ok: true, value: 30_000, text: "30s" });
    const stored = new Map([["svc.webhook-retry-base", (put as { text: string }).text], ["svc.webhook-timeout", (parseRuntimeValue("webhookTimeoutMs", 5) as { text: string }).text]]);
    const live = overlayRuntime(start(), stored);
    expect(live.webhookRetryBaseMs).toBe(30_000);
    expect(live.webhookTimeoutMs).toBe(5_000);
  });

  it("lays stored values over the defaults, never over what the operator fixed at start", () => {
    const stored = new Map([
      ["svc.rate-limit", "7"],
      ["svc.malware-action", "ALLOW"],
      ["svc.deny-list-action", "WARN"],
    ]);
    const live = overlayRuntime(start({ SVC_MALWARE_ACTION: "WARN" }), stored);
    expect(live.rateLimit).toBe(7);
    expect(live.denyListAction).toBe("WARN");
    expect(live.malwareAction).toBe("WARN");
  });

  it("keeps the start value when a stored text no longer parses, and says so", () => {
    const bad: string[] = [];
    const live = overlayRuntime(start(), new Map([["svc.rate-limit", "lots"]]), (name) => bad.push(name));
    expect(live.rateLimit).toBe(6000);
    expect(bad).toEqual(["svc.rate-limit"]);
  });

  it("lays a stored value only over settings the service reads", () => {
    const { rateLimit: _, ...withoutRateLimit } = start();
    const live = overlayRuntime(withoutRateLimit, new Map([["svc.rate-limit", "7"], ["svc.malware-action", "WARN"]]));
    expect("rateLimit" in live).toBe(false);
    expect(live.malwareAction).toBe("WARN");
  });
});

describe("per-tenant overrides", () => {
  it("lay a tenant's gate settings over the deployment's values, never over a fixed one, and only for that tenant", () => {
    const overrides = new Map([["default", new Map([["svc.deny-list-action", "ALLOW"], ["svc.malware-action", "ALLOW"], ["svc.rate-limit", "1"]])]]);
    const live = overlayTenant(start({ SVC_MALWARE_ACTION: "WARN" }), overrides, "default");
    expect(live.denyListAction).toBe("ALLOW");
    expect(live.malwareAction).toBe("WARN");
    // rate-limit is not a setting set for a tenant: its per-tenant values live in /api/rate-limits.
    expect(live.rateLimit).toBe(6000);
    expect(overlayTenant(start(), overrides, "other").denyListAction).toBe("BLOCK");
    expect(tenantOverridesOf({ stored: {}, tenants: { t1: { "svc.deny-list-action": "WARN" } } }).get("t1")?.get("svc.deny-list-action")).toBe("WARN");
  });
});
