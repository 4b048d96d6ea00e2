import { describe, expect, it } from "vitest";
import { FORMATS } from "../formats/index.js";
import { migrationsOf } from "./migrations.js";

describe("the artifacts service's migrations", () => {
  it("are the service's and every format's, under the names databases have recorded, in the order they ran", () => {
    // A database records the names it has run: moving a format's tables into its folder renamed nothing.
    expect(Object.keys(migrationsOf(FORMATS)).sort()).toEqual([
      "0001_repositories_and_artifacts",
      "0002_outbox_downloads_retention_holds",
      "0003_npm_packages",
      "0004_exports_and_npm_tombstones",
      "0005_maven",
      "0006_pypi_files",
      "0007_pypi_files_follow_artifacts",
      "0008_repository_removal",
      "0009_artifacts_by_sha256",
      "0010_gate",
      "0011_repository_type_upstream",
      "0012_npm_proxy_documents",
      "0013_downloaders",
      "0014_gate_triage_refusals",
      "0015_proxy_documents",
      "0016_imports",
      "0017_gate_cooldown",
      "0018_group_members",
      "0019_maven_publish_times",
      "0020_go_versions",
      "0021_cargo_crates",
      "0022_build_caches",
      "0023_oci_registry",
      "0023_oci_registry_refs",
      "0024_repository_quotas",
      "0025_scope_from_path",
      "0026_fetch_streams",
    ]);
  });

  it("refuse a format whose migration takes a name already used, naming both", () => {
    const clash = { name: "toy", migrations: { "0005_maven": { up: async () => {} } } };
    expect(() => migrationsOf([...FORMATS, clash])).toThrow("migration 0005_maven of the toy format has a name already used");
  });
});
