import { Zip, ZipDeflate, strToU8, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { checkModuleZip, moduleOfGoMod } from "./go-zip.js";

const M = "example.com/lib";
const V = "v1.0.0";
const P = `${M}@${V}/`;

const reader = (zip: Uint8Array) => async (start: number, end: number) => Buffer.from(zip.subarray(start, end + 1));
const check = (zip: Uint8Array, module = M, version = V) => checkModuleZip(reader(zip), zip.length, module, version);
const zipOf = (files: Record<string, string>) => zipSync(Object.fromEntries(Object.entries(files).map(([k, v]) => [k, strToU8(v)])));

/** A zip with entries in this order, names repeated as given (fflate's streaming writer does not refuse that). */
function zipEntries(entries: [string, string][]): Uint8Array {
  const parts: Uint8Array[] = [];
  const z = new Zip((err, chunk) => {
    if (err) throw err;
    parts.push(chunk);
  });
  for (const [name, text] of entries) {
    const f = new ZipDeflate(name);
    z.add(f);
    f.push(strToU8(text), true);
  }
  z.end();
  return Buffer.concat(parts);
}

describe("module zips checked as the go command checks them", () => {
  it("takes a module zip and answers its root go.mod, byte for byte", async () => {
    const got = await check(zipOf({ [`${P}go.mod`]: `module ${M}\n\ngo 1.21\n`, [`${P}lib.go`]: "package lib\n", [`${P}sub/LICENSE`]: "MIT" }));
    expect(got.goMod?.toString()).toBe(`module ${M}\n\ngo 1.21\n`);
    expect(got.files).toBe(3);
  });

  it("refuses files outside <module>@<version>/, bad paths, case-folding twins, duplicates and go.mod below the root", async () => {
    await expect(check(zipOf({ [`${P}go.mod`]: "module x", "other/file.go": "" }))).rejects.toThrow(/does not have prefix "example.com\/lib@v1.0.0\/"/);
    await expect(check(zipOf({ [`${P}go.mod`]: "module x" }), M, "v1.0.1")).rejects.toThrow(/prefix/);
    await expect(check(zipOf({ [`${P}a/../b.go`]: "" }))).rejects.toThrow(/malformed file path/);
    await expect(check(zipOf({ [`${P}a:b.go`]: "" }))).rejects.toThrow(/invalid char ":"/);
    await expect(check(zipOf({ [`${P}README`]: "", [`${P}readme`]: "" }))).rejects.toThrow(/case-insensitive file name collision/);
    await expect(check(zipEntries([[`${P}a.go`, "x"], [`${P}a.go`, "y"]]))).rejects.toThrow(/multiple entries for file "a.go"/);
    await expect(check(zipOf({ [`${P}sub/go.mod`]: "module y" }))).rejects.toThrow(/go.mod file not in module root directory/);
    await expect(check(zipOf({ [`${P}GO.MOD`]: "module y" }))).rejects.toThrow(/go.mod files must have lowercase names/);
  });

  it("refuses what is not a zip, and a go.mod or LICENSE over 16 MiB", async () => {
    await expect(check(strToU8("not a zip at all, just some text that is long enough"))).rejects.toThrow(/no end of central directory/);
    const big = "x".repeat(16 * 1024 * 1024 + 1);
    await expect(check(zipOf({ [`${P}go.mod`]: `module ${M}\n//${big}` }))).rejects.toThrow(/go.mod file too large/);
    await expect(check(zipOf({ [`${P}go.mod`]: `module ${M}\n`, [`${P}LICENSE`]: big }))).rejects.toThrow(/LICENSE file too large/);
  });

  it("reads the module path a go.mod declares, in each of its spellings", () => {
    expect(moduleOfGoMod("// comment\nmodule example.com/m // trailing\n\ngo 1.21\n")).toBe("example.com/m");
    expect(moduleOfGoMod('module "example.com/q"\n')).toBe("example.com/q");
    expect(moduleOfGoMod("module (\n\texample.com/b\n)\n")).toBe("example.com/b");
    expect(moduleOfGoMod("go 1.21\n")).toBeUndefined();
  });
});
