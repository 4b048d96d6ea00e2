import { describe, expect, it } from "vitest";
import { isFormatName } from "@svc/contracts";
import type { Address } from "../domain/artifact-service.js";
import type { FormatDeps, FormatModule } from "./format.js";
import { formatsOf } from "./format.js";
import { FORMATS } from "./index.js";

const at = (repository: string, path: string): Address => ({ repository, path, segments: path.split("/") });
const tx = undefined as never;

describe("the format table", () => {
  it("names each format as svc.repository-format and the API accept a name (packages/contracts)", () => {
    expect(FORMATS.map((f) => f.name).filter((n) => !isFormatName(n))).toEqual([]);
  });

  it("describes the API's format field from each row's label", () => {
    expect(formatsOf(FORMATS, () => undefined).description).toBe("raw (files), npm, maven (the Maven 2 layout), pypi (a package index), go (Go modules, a GOPROXY), cargo (a sparse registry) or oci (container images, at /v2/)");
  });

  it("dispatches each hook to the format of the repository it is about, and nothing for a repository it does not serve", async () => {
    const calls: string[] = [];
    const row = (name: string): FormatModule => ({
      name,
      label: name,
      create: () => ({
        removing: async (_tx, a) => void calls.push(`${name} removing ${a.repository}/${a.path}`),
        indexing: async (_tx, a) => void calls.push(`${name} indexing ${a.repository}/${a.path}`),
        coordinates: (path) => ({ format: name, name: path, version: "1", file: path }),
      }),
    });
    const repositories: Record<string, string> = { one: "a", two: "b" };
    const formats = formatsOf([row("a"), row("b")], (r) => repositories[r]);
    expect(() => formats.of("one")).toThrow(/before they are built/);
    formats.build({} as Omit<FormatDeps, "formatOf">);
    await formats.hooks.removing(tx, at("one", "x"));
    await formats.hooks.indexing(tx, at("two", "y"), new Date());
    await formats.hooks.removing(tx, at("three", "z"));
    expect(calls).toEqual(["a removing one/x", "b indexing two/y"]);
    expect(formats.hooks.coordinates("two", "p")).toMatchObject({ format: "b" });
    expect(formats.hooks.coordinates("three", "p")).toBeUndefined();
  });

  it("lists each format with its label and whether it may be a proxy, in the table's order (GET /api/formats)", () => {
    const row = (name: string, proxies: boolean): FormatModule => ({ name, label: `${name} (label)`, create: () => ({ proxies }) });
    const formats = formatsOf([row("a", true), row("b", false)], () => undefined);
    formats.build({} as Omit<FormatDeps, "formatOf">);
    expect(formats.catalog()).toEqual([
      { name: "a", label: "a (label)", proxy: true },
      { name: "b", label: "b (label)", proxy: false },
    ]);
  });

  it("refuses a table that names a format twice", () => {
    expect(() => formatsOf([FORMATS[0]!, FORMATS[0]!], () => undefined)).toThrow(/twice/);
  });
});
