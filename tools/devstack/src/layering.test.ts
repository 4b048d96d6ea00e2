import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The layering the repository promises: a service never reaches into another service, a package
 * never into a service, and the product (services/, packages/) never into the development
 * tooling, the bench or the e2e tests, neither by relative path nor by workspace package name.
 * Every import, `export … from` and `import()` of every .ts file under services/ and packages/ is
 * read with TypeScript's own pre-processor and resolved to the area of the repository it lands in.
 */
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Where a file or an import lands: "services/gateway", "packages/kit", "tools", "bench", "test-e2e", or "other". */
type Area = string;

function areaOf(repoPath: string): Area {
  const [top, second] = repoPath.split("/");
  if (top === "services" || top === "packages") return second ? `${top}/${second}` : top;
  if (top === "tools" || top === "bench" || top === "test-e2e") return top;
  return "other";
}

/** Workspace package name -> its area, read from each package.json. */
function workspacePackages(): Map<string, Area> {
  const map = new Map<string, Area>();
  const dirs = ["packages", "services", "tools"].flatMap((d) => readdirSync(join(repoRoot, d)).map((n) => `${d}/${n}`));
  for (const dir of [...dirs, "bench", "test-e2e"]) {
    const manifest = join(repoRoot, dir, "package.json");
    if (!existsSync(manifest)) continue;
    const { name } = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string };
    if (name) map.set(name, areaOf(dir));
  }
  return map;
}

/** The area an import specifier of `fromFile` (repository-relative) lands in; undefined for a third-party or node: module. */
function importedArea(fromFile: string, specifier: string, packages: Map<string, Area>): Area | undefined {
  if (specifier.startsWith(".")) {
    const target = relative(repoRoot, resolve(repoRoot, dirname(fromFile), specifier)).split(sep).join("/");
    return target.startsWith("..") ? "outside the repository" : areaOf(target);
  }
  const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!;
  return packages.get(name);
}

/** Why `from` may not import `to`; undefined when it may. */
function refusal(from: Area, to: Area): string | undefined {
  if (from === to) return undefined;
  const tooling = ["tools", "bench", "test-e2e"];
  if ((from.startsWith("services/") || from.startsWith("packages/")) && tooling.includes(to)) return `the product does not import the development tooling (${to})`;
  if (from.startsWith("services/") && to.startsWith("services/")) return `a service does not import another service (${to})`;
  if (from.startsWith("packages/") && to.startsWith("services/")) return `a package does not import a service (${to})`;
  if ((from.startsWith("services/") || from.startsWith("packages/")) && to === "outside the repository") return "an import leaves the repository";
  return undefined;
}

function typescriptFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name === "node_modules" || name.startsWith(".")) return [];
    const p = join(dir, name);
    return statSync(p).isDirectory() ? typescriptFiles(p) : name.endsWith(".ts") ? [p] : [];
  });
}

/** Every forbidden import under services/ and packages/, as "file: 'specifier': why". */
function violations(): string[] {
  const packages = workspacePackages();
  const found: string[] = [];
  for (const file of ["services", "packages"].flatMap((d) => typescriptFiles(join(repoRoot, d)))) {
    const repoPath = relative(repoRoot, file).split(sep).join("/");
    const from = areaOf(repoPath);
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, false);
    for (const { fileName: specifier } of importedFiles) {
      const to = importedArea(repoPath, specifier, packages);
      const why = to === undefined ? undefined : refusal(from, to);
      if (why) found.push(`${repoPath}: '${specifier}': ${why}`);
    }
  }
  return found;
}

describe("layering", () => {
  it("no service imports another service, no package imports a service, and neither imports the tooling, the bench or the e2e tests", () => {
    expect(violations()).toEqual([]);
  });

  it("reads relative paths and package names alike, in static, re-exported and dynamic imports", () => {
    const source = [
      'import { a } from "../../auth/src/a.js";',
      'export { b } from "@svc/devstack/service-runner";',
      'const c = await import("../../../bench/run.js");',
      'import type { D } from "@svc/kit";',
    ].join("\n");
    const packages = workspacePackages();
    const areas = ts.preProcessFile(source, true, false).importedFiles.map((f) => importedArea("services/gateway/src/x.ts", f.fileName, packages));
    expect(areas).toEqual(["services/auth", "tools", "bench", "packages/kit"]);
    expect(areas.map((to) => refusal("services/gateway", to!) !== undefined)).toEqual([true, true, true, false]);
    expect(refusal("packages/kit", "services/admin")).toBeDefined();
    expect(refusal("packages/kit", "packages/contracts")).toBeUndefined();
    expect(refusal("tools", "services/gateway")).toBeUndefined();
  });
});
