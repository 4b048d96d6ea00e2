import { describe, expect, it } from "vitest";
import { minAge, minAgeMs } from "@svc/kit";
import { ageText, minAgeOf, youngVersions } from "./cooldown.js";

const NOW = Date.parse("2026-03-10T12:00:00Z");
const at = (iso: string) => new Date(iso);
const npm = (v: string) => `left-pad@${v}`;
const none = () => false;
const day = minAgeOf("1d", "svc.gate.min-age");

describe("the cooldown's age computation", () => {
  it("keeps back a version published less than the minimum age ago, saying when it becomes available", () => {
    const young = youngVersions(npm, new Map([["2.0.0", at("2026-03-10T06:00:00Z")]]), day, none, NOW);
    expect(young.get("2.0.0")).toBe("left-pad@2.0.0 is younger than the minimum age of 1d (svc.gate.min-age): published 2026-03-10T06:00:00.000Z (6h ago), available from 2026-03-11T06:00:00.000Z; the cooldown keeps it back until then");
  });

  it("says how old the version is, as a person reads an age", () => {
    expect([0, 45_000, 12 * 60_000, 3 * 3_600_000 + 5 * 60_000, 3 * 3_600_000, 2 * 86_400_000 + 4 * 3_600_000, 2 * 86_400_000, -5_000].map(ageText)).toEqual(["0s", "45s", "12m", "3h 5m", "3h", "2d 4h", "2d", "0s"]);
  });

  it("lets through a version exactly as old as the minimum age, and older ones", () => {
    const young = youngVersions(npm, new Map([["1.0.0", at("2026-03-09T12:00:00Z")], ["0.9.0", at("2020-01-01T00:00:00Z")]]), day, none, NOW);
    expect([...young.keys()]).toEqual([]);
  });

  it("counts a version with no publish time known, or an unreadable one, as too young (fail closed)", () => {
    const young = youngVersions(npm, new Map([["1.0.0", undefined], ["1.0.1", new Date("not a date")]]), day, none, NOW);
    expect([...young.keys()]).toEqual(["1.0.0", "1.0.1"]);
    expect(young.get("1.0.0")).toContain("has no publish time known upstream");
  });

  it("keeps nothing back without a minimum age, however young or unknown the version", () => {
    expect(youngVersions(npm, new Map([["1.0.0", undefined], ["2.0.0", new Date(NOW)]]), undefined, none, NOW).size).toBe(0);
    expect(youngVersions(npm, new Map([["1.0.0", undefined]]), minAgeOf("off", "svc.gate.min-age"), none, NOW).size).toBe(0);
  });

  it("lets through what an allow names", () => {
    const young = youngVersions(npm, new Map([["2.0.0", new Date(NOW)], ["2.0.1", new Date(NOW)]]), day, (v) => v === "2.0.1", NOW);
    expect([...young.keys()]).toEqual(["2.0.0"]);
  });

  it("names a repository's own minimum age when that is the one in force", () => {
    const young = youngVersions(npm, new Map([["2.0.0", new Date(NOW - 60_000)]]), minAgeOf("30m", "the minimum age of repository npmjs"), none, NOW);
    expect(young.get("2.0.0")).toContain("minimum age of 30m (the minimum age of repository npmjs)");
  });
});

describe("svc.gate.min-age", () => {
  it("reads the durations operators write, kept as written", () => {
    expect(minAge("72h")).toEqual({ ok: true, value: "72h" });
    expect(minAge(" 3d ")).toEqual({ ok: true, value: "3d" });
    expect(minAge("P3D")).toEqual({ ok: true, value: "P3D" });
    expect(minAgeMs("72h")).toBe(72 * 3_600_000);
    expect(minAgeMs("30m")).toBe(1_800_000);
  });

  it("reads blank, 0 and off as no cooldown", () => {
    for (const t of ["", "0", "off", "OFF", "0s"]) expect(minAge(t)).toEqual({ ok: true, value: "" });
    expect(minAgeMs("")).toBe(0);
  });

  it("refuses what is not a duration, saying what it takes", () => {
    const r = minAge("three days");
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toContain("72h, 3d, 30m or P3D");
  });
});
