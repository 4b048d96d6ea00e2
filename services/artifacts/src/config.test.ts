import { describe, expect, it } from "vitest";
import { SettingsError } from "@svc/kit";
import { loadConfig } from "./config.js";

const base = { SVC_DATABASE_URL: "postgres://x@127.0.0.1/x", SVC_INTERNAL_SECRET: "s".repeat(40), SVC_NATS_URL: "nats://127.0.0.1:4222" };

describe("svc.storage.s3.redirect", () => {
  it("refuses to start on a filesystem node, naming the setting", () => {
    const load = () => loadConfig([], { ...base, SVC_FILESYSTEM_ROOT: "/tmp/x", SVC_STORAGE_S3_REDIRECT: "true" });
    expect(load).toThrow(SettingsError);
    expect(load).toThrow(/svc\.storage\.s3\.redirect=true needs svc\.storage=s3/);
  });

  it("is off by default, with a 60 s lifetime, and takes a lifetime from 1 s to 7 days", () => {
    const c = loadConfig([], { ...base, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b" });
    expect(c.s3Redirect).toBe(false);
    expect(c.s3RedirectTtlMs).toBe(60_000);
    expect(loadConfig([], { ...base, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b", SVC_STORAGE_S3_REDIRECT: "true", SVC_STORAGE_S3_REDIRECT_TTL: "5m" }).s3RedirectTtlMs).toBe(300_000);
    expect(() => loadConfig([], { ...base, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b", SVC_STORAGE_S3_REDIRECT_TTL: "8d" })).toThrow(/svc\.storage\.s3\.redirect\.ttl/);
    expect(() => loadConfig([], { ...base, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b", SVC_STORAGE_S3_REDIRECT_TTL: "0" })).toThrow(/svc\.storage\.s3\.redirect\.ttl/);
  });
});
