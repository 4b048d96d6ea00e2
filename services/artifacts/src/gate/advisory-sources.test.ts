import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { strToU8, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { readSource, readZip } from "./advisory-sources.js";

const record = (id: string, name: string) => JSON.stringify({ id, modified: "2026-01-01T00:00:00Z", affected: [{ package: { ecosystem: "npm", name }, versions: ["1.0.0"] }] });

describe("advisory sources", () => {
  it("a folder's records and zips are read, in sub-folders too; files that are no usable record are counted", async () => {
    const dir = mkdtempSync(join(tmpdir(), "osv-"));
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "MAL-1.json"), record("MAL-1", "a"));
    writeFileSync(join(dir, "broken.json"), "{not json");
    writeFileSync(join(dir, "sub", "all.zip"), zipSync({ "GHSA-1.json": strToU8(record("GHSA-1", "b")), "DSA-1.json": strToU8(JSON.stringify({ id: "DSA-1", affected: [{ package: { ecosystem: "Debian", name: "x" } }] })) }));
    const got = await readSource(dir);
    expect(got.advisories.map((a) => a.id).sort()).toEqual(["GHSA-1", "MAL-1"]);
    expect(got.skipped).toBe(2);
  });

  it("a zip cut short, or no zip at all, is an error (the last good data stays)", async () => {
    const zip = zipSync({ "GHSA-1.json": strToU8(record("GHSA-1", "b").repeat(50)) }, { level: 0 });
    expect(() => readZip(zip.subarray(0, Math.floor(zip.length / 2)))).toThrow(/cut short|damaged/);
    expect(() => readZip(strToU8("hello"))).toThrow("not a zip archive");
    await expect(readSource(join(tmpdir(), "no-such-osv-folder"))).rejects.toThrow(/ENOENT/);
  });
});
