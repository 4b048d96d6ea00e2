import { describe, expect, it } from "vitest";
import { answerSettings, loadSettings } from "@svc/kit";
import { settingsTable } from "./settings-table.js";

const SECRET = "s".repeat(40);
const node = (name: string, service: string, env: Record<string, string>) => answerSettings(loadSettings({ env: { SVC_INTERNAL_SECRET: SECRET, ...env }, argv: [] }), name, service);

describe("settings table", () => {
  it("lines the nodes up per setting, says whether they agree, and shows a secret only as set", () => {
    const t = settingsTable([
      node("gateway@a", "gateway", { SVC_READ_ONLY: "true", SVC_REDIS_URL: "redis://:pw-one@r:6379" }),
      node("gateway@b", "gateway", { SVC_REDIS_URL: "redis://:pw-two@r:6379" }),
      node("admin@c", "admin", {}),
    ]);
    expect(t.nodes.map((n) => n.node)).toEqual(["admin@c", "gateway@a", "gateway@b"]);
    const readOnly = t.settings.find((s) => s.name === "svc.read-only")!;
    expect(readOnly.agree).toBe(false);
    expect(readOnly.nodes).toContainEqual({ node: "gateway@a", service: "gateway", from: "environment", set: true, value: "true" });
    const redis = t.settings.find((s) => s.name === "svc.redis-url")!;
    expect(redis).toMatchObject({ secret: true, agree: false, environment: "SVC_REDIS_URL" });
    expect(redis.nodes.every((n) => n.value === undefined && n.set)).toBe(true);
    expect(t.settings.find((s) => s.name === "svc.tenant")!.agree).toBe(true);
    expect(JSON.stringify(t)).not.toMatch(/pw-one|pw-two|s{40}/);
  });

  it("does not count settings that differ by nature (each process's own host and port, log level, config file, neighbours' addresses) as nodes disagreeing", () => {
    const t = settingsTable([
      node("gateway@a", "gateway", { SVC_PORT: "8080", SVC_HOST: "10.0.0.1", SVC_LOG_LEVEL: "debug", SVC_AUTH_URL: "http://10.0.0.1:18081" }),
      node("gateway@b", "gateway", { SVC_PORT: "8081", SVC_HOST: "10.0.0.2", SVC_AUTH_URL: "http://10.0.0.2:18081" }),
      node("auth@c", "auth", { SVC_PORT: "18081", SVC_CONFIG_FILE: "" }),
    ]);
    for (const name of ["svc.port", "svc.host", "svc.log-level", "svc.auth.url"]) expect(t.settings.find((s) => s.name === name), name).toMatchObject({ agree: true, perProcess: true });
    expect(t.settings.find((s) => s.name === "svc.port")!.nodes.map((n) => n.value)).toEqual(["18081", "8080", "8081"]);
    expect(t.settings.filter((s) => !s.agree)).toEqual([]);
    expect(t.settings.find((s) => s.name === "svc.rate-limit")).not.toHaveProperty("perProcess");
  });

  it("keeps the row of a setting `always` names though no node that answered reads it (a run-time setting whose readers were slow to answer)", () => {
    const answered = [node("admin@c", "admin", {})];
    expect(settingsTable(answered).settings.map((r) => r.name)).not.toContain("svc.webhook-endpoints");
    const kept = settingsTable(answered, (name) => name === "svc.webhook-endpoints").settings.find((r) => r.name === "svc.webhook-endpoints");
    expect(kept).toMatchObject({ nodes: [], agree: true, readBy: ["notifier"] });
  });
});
