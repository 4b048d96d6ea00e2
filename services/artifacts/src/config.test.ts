import { describe, expect, it } from "vitest";
import { SettingsError } from "@svc/kit";
import { loadConfig } from "./config.js";
import type { FormatModule } from "./formats/format.js";

const base = {
  SVC_DATABASE_URL: "postgres://u:p@127.0.0.1:5432/db",
  SVC_NATS_URL: "nats://127.0.0.1:4222",
  SVC_INTERNAL_SECRET: "s".repeat(40),
  SVC_FILESYSTEM_ROOT: "/srv/artifacts",
};

const problemsOf = (env: Record<string, string>, formats?: readonly FormatModule[]): string[] => {
  try {
    loadConfig([], { ...base, ...env }, formats);
  } catch (err) {
    if (err instanceof SettingsError) return err.problems;
    throw err;
  }
  return [];
};

const row = (name: string): FormatModule => ({ name, label: name, create: () => ({}) });

describe("artifacts settings: svc.repository-format", () => {
  it("takes any format of the service's format table, in any case", () => {
    expect(loadConfig([], { ...base, SVC_REPOSITORY_FORMAT: "PyPI" }).repositoryFormat).toBe("pypi");
    expect(loadConfig([], base).repositoryFormat).toBe("raw");
  });

  it("refuses a name the table lacks, listing the formats it has", () => {
    expect(problemsOf({ SVC_REPOSITORY_FORMAT: "cobol" })).toEqual([
      'svc.repository-format is "cobol", a format this artifacts service does not serve (it serves raw, npm, maven, pypi, go, cargo, oci)',
    ]);
    expect(problemsOf({ SVC_REPOSITORY_FORMAT: "no such!" })[0]).toMatch(/svc\.repository-format .*must be a format name/);
  });

  it("a format added to the table is accepted without touching the settings", () => {
    expect(problemsOf({ SVC_REPOSITORY_FORMAT: "cargo" }, [row("raw"), row("cargo")])).toEqual([]);
    expect(problemsOf({ SVC_REPOSITORY_FORMAT: "npm" }, [row("raw"), row("cargo")])[0]).toMatch(/it serves raw, cargo/);
  });
});

const redirectBase = { SVC_DATABASE_URL: "postgres://x@127.0.0.1/x", SVC_INTERNAL_SECRET: "s".repeat(40), SVC_NATS_URL: "nats://127.0.0.1:4222" };

describe("svc.storage.s3.redirect", () => {
  it("refuses to start on a filesystem node, naming the setting", () => {
    const load = () => loadConfig([], { ...redirectBase, SVC_FILESYSTEM_ROOT: "/tmp/x", SVC_STORAGE_S3_REDIRECT: "true" });
    expect(load).toThrow(SettingsError);
    expect(load).toThrow(/svc\.storage\.s3\.redirect=true needs svc\.storage=s3/);
  });

  it("is off by default, with a 60 s lifetime, and takes a lifetime from 1 s to 7 days", () => {
    const c = loadConfig([], { ...redirectBase, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b" });
    expect(c.s3Redirect).toBe(false);
    expect(c.s3RedirectTtlMs).toBe(60_000);
    expect(loadConfig([], { ...redirectBase, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b", SVC_STORAGE_S3_REDIRECT: "true", SVC_STORAGE_S3_REDIRECT_TTL: "5m" }).s3RedirectTtlMs).toBe(300_000);
    expect(() => loadConfig([], { ...redirectBase, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b", SVC_STORAGE_S3_REDIRECT_TTL: "8d" })).toThrow(/svc\.storage\.s3\.redirect\.ttl/);
    expect(() => loadConfig([], { ...redirectBase, SVC_STORAGE: "s3", SVC_STORAGE_S3_BUCKET: "b", SVC_STORAGE_S3_REDIRECT_TTL: "0" })).toThrow(/svc\.storage\.s3\.redirect\.ttl/);
  });
});
