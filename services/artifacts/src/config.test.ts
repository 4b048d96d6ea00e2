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
      'svc.repository-format is "cobol", a format this artifacts service does not serve (it serves raw, npm, maven, pypi)',
    ]);
    expect(problemsOf({ SVC_REPOSITORY_FORMAT: "no such!" })[0]).toMatch(/svc\.repository-format .*must be a format name/);
  });

  it("a format added to the table is accepted without touching the settings", () => {
    expect(problemsOf({ SVC_REPOSITORY_FORMAT: "cargo" }, [row("raw"), row("cargo")])).toEqual([]);
    expect(problemsOf({ SVC_REPOSITORY_FORMAT: "npm" }, [row("raw"), row("cargo")])[0]).toMatch(/it serves raw, cargo/);
  });
});
