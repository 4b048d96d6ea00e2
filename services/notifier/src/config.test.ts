import { describe, expect, it } from "vitest";
import { SettingsError } from "@svc/kit";
import { loadConfig } from "./config.js";

const base = {
  SVC_DATABASE_URL: "postgres://u:p@127.0.0.1:5432/db",
  SVC_NATS_URL: "nats://127.0.0.1:4222",
  SVC_INTERNAL_SECRET: "s".repeat(40),
};

const problemsOf = (env: Record<string, string>, argv: string[] = []): string[] => {
  try {
    loadConfig(argv, { ...base, ...env });
  } catch (err) {
    if (err instanceof SettingsError) return err.problems;
    throw err;
  }
  return [];
};

describe("notifier settings", () => {
  it("defaults: delivery off, no endpoints, five retries, 30 s base pause, 10 s per attempt", () => {
    const c = loadConfig([], base);
    expect(c).toMatchObject({ enabled: false, endpoints: [], retries: 5, allowInternal: false, retryBaseMs: 30_000, timeoutMs: 10_000 });
  });

  it("reads endpoints and secrets from the environment or -D arguments", () => {
    const c = loadConfig(["-Dsvc.webhook=true", "-Dsvc.webhook-attempts=2"], {
      ...base,
      SVC_WEBHOOK_ENDPOINTS: "https://a.example/hook none;https://b.example/x published",
      SVC_WEBHOOK_SECRETS: "https://b.example/x whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      SVC_WEBHOOK_RETRY_BASE: "250ms",
      SVC_WEBHOOK_TIMEOUT: "2s",
    });
    expect(c.enabled).toBe(true);
    expect(c.retries).toBe(2);
    expect(c.endpoints.map((e) => [e.url, e.key !== undefined])).toEqual([
      ["https://a.example/hook", false],
      ["https://b.example/x", true],
    ]);
    expect([c.retryBaseMs, c.timeoutMs]).toEqual([250, 2000]);
  });

  it("refuses to start on a bad line, naming the setting, where it came from and the line", () => {
    expect(problemsOf({ SVC_WEBHOOK_ENDPOINTS: "https://a.example/hook none\nhttps://b.example/x pubished" })).toEqual([
      expect.stringMatching(/^svc\.webhook-endpoints \(from environment SVC_WEBHOOK_ENDPOINTS\) line 2 "https:\/\/b\.example\/… pubished": unknown event "pubished"/),
    ]);
    expect(problemsOf({}, ["-Dsvc.webhook-endpoints=https://127.0.0.1/x none"])).toEqual([
      expect.stringMatching(/^svc\.webhook-endpoints \(from -Dsvc\.webhook-endpoints\) line 1 .*loopback/),
    ]);
  });

  it("refuses bad durations for the service's own knobs", () => {
    expect(problemsOf({ SVC_WEBHOOK_RETRY_BASE: "soon" })).toEqual([expect.stringMatching(/^svc\.webhook-retry-base \(from environment SVC_WEBHOOK_RETRY_BASE\) must be a duration/)]);
    expect(problemsOf({ SVC_WEBHOOK_TIMEOUT: "0" })).toEqual([expect.stringMatching(/^svc\.webhook-timeout \(from environment SVC_WEBHOOK_TIMEOUT\) must be a duration from 100 ms/)]);
    expect(problemsOf({}, ["-Dsvc.webhook-retry-base=2s"])).toEqual([]);
  });

  it("allows internal and plain-http endpoints only with svc.webhook-allow-internal", () => {
    const env = { SVC_WEBHOOK_ENDPOINTS: "http://127.0.0.1:9000/hook none" };
    expect(problemsOf(env)).toHaveLength(1);
    expect(loadConfig([], { ...base, ...env, SVC_WEBHOOK_ALLOW_INTERNAL: "true" }).endpoints).toHaveLength(1);
  });
});
