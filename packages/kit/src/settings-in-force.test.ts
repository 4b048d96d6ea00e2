import { describe, expect, it } from "vitest";
import { answerSettings } from "./node-agent.js";
import { loadSettings } from "./settings.js";

const SECRET = "s".repeat(40);
const load = (env: Record<string, string>, argv: string[] = [], files: Record<string, string> = {}) =>
  loadSettings({ env, argv, readFile: (p) => files[p] ?? "" });
const entry = (s: ReturnType<typeof load>, name: string) => s.inForce.find((e) => e.name === name)!;

describe("settings in force", () => {
  it("records where each value came from: default, environment, -D or file", () => {
    const s = load({ SVC_CONFIG_FILE: "/etc/svc.properties", SVC_CACHE_TTL: "1m", SVC_INTERNAL_SECRET: SECRET }, ["-Dsvc.rate-limit=50"], { "/etc/svc.properties": "svc.webhook-attempts=3\n" });
    expect(entry(s, "svc.cache.ttl")).toMatchObject({ from: "environment", value: "1m", set: true });
    expect(entry(s, "svc.rate-limit")).toMatchObject({ from: "-D", value: "50" });
    expect(entry(s, "svc.webhook-attempts")).toMatchObject({ from: "file", value: "3" });
    expect(entry(s, "svc.repository")).toMatchObject({ from: "default", value: "default" });
    expect(entry(s, "svc.shutdown-grace")).toMatchObject({ from: "default", value: "25s" });
  });

  it("reports a secret only as set or not set, never its text", () => {
    const db = "postgres://svc:hunter2-pass@db:5432/svc";
    const s = load({ SVC_INTERNAL_SECRET: SECRET, SVC_DATABASE_URL: db });
    expect(entry(s, "svc.database-url")).toEqual({ name: "svc.database-url", from: "environment", secret: true, set: true, digest: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(entry(s, "svc.redis-url")).toMatchObject({ secret: true, set: false });
    const text = JSON.stringify(s.inForce);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain(SECRET);
  });

  it("reports the S3 blob store's keys as secrets, its bucket and endpoint as they are", () => {
    const s = load({ SVC_INTERNAL_SECRET: SECRET, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "artifacts", SVC_STORAGE_S3_ENDPOINT: "https://rgw.example.com", SVC_STORAGE_S3_ACCESS_KEY: "AKIAEXAMPLEKEY", SVC_STORAGE_S3_SECRET_KEY: "wJalr-secret-text" });
    expect(s.storage).toBe("s3");
    expect(entry(s, "svc.storage.s3.access-key")).toMatchObject({ secret: true, set: true });
    expect(entry(s, "svc.storage.s3.secret-key")).toMatchObject({ secret: true, set: true });
    expect(entry(s, "svc.storage.s3.bucket")).toMatchObject({ secret: false, value: "artifacts" });
    const text = JSON.stringify(s.inForce);
    expect(text).not.toContain("wJalr-secret-text");
    expect(text).not.toContain("AKIAEXAMPLEKEY");
    expect(load({ SVC_STORAGE: "S3" }).storage).toBe("s3");
    expect(() => load({ SVC_STORAGE: "nfs" })).toThrow(/svc\.storage .*must be filesystem or s3/);
  });

  it("gives equal values equal digests however they are written, and keys a secret's digest by the internal secret", () => {
    const a = load({ SVC_INTERNAL_SECRET: SECRET, SVC_CACHE_TTL: "1m", SVC_DATABASE_URL: "postgres://a@db/x" });
    const b = load({ SVC_INTERNAL_SECRET: SECRET, SVC_CACHE_TTL: "60s", SVC_DATABASE_URL: "postgres://a@db/x" });
    const other = load({ SVC_INTERNAL_SECRET: "t".repeat(40), SVC_DATABASE_URL: "postgres://a@db/x" });
    expect(entry(a, "svc.cache.ttl").digest).toBe(entry(b, "svc.cache.ttl").digest);
    expect(entry(a, "svc.database-url").digest).toBe(entry(b, "svc.database-url").digest);
    expect(entry(a, "svc.database-url").digest).not.toBe(entry(other, "svc.database-url").digest);
  });

  it("a node reports the settings its service reads", () => {
    const s = load({ SVC_INTERNAL_SECRET: SECRET });
    const names = answerSettings(s, "walker@h:1", "walker").settings.map((e) => e.name);
    expect(names).toContain("svc.filesystem-root");
    expect(names).toContain("svc.profile");
    expect(names).not.toContain("svc.redis-url");
    expect(answerSettings({}, "x", "walker").settings).toEqual([]);
  });
});
