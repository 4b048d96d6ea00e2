import { describe, expect, it } from "vitest";
import { addDuration, parseExpiry, parseIsoDuration, parseSettingDuration } from "./duration.js";

const NOW = new Date("2026-01-31T12:00:00Z");

describe("durations", () => {
  it("reads ISO-8601 durations", () => {
    expect(parseIsoDuration("P90D")).toMatchObject({ days: 90 });
    expect(parseIsoDuration("PT5M")).toMatchObject({ minutes: 5 });
    expect(parseIsoDuration("P1Y2M3DT4H5M6.5S")).toEqual({ years: 1, months: 2, weeks: 0, days: 3, hours: 4, minutes: 5, seconds: 6.5 });
    expect(parseIsoDuration("P2W")).toMatchObject({ weeks: 2 });
  });

  it("refuses what is not a duration", () => {
    for (const bad of ["", "P", "PT", "90D", "P1H", "P-1D", "PT1D", "1 week", "P1DT"]) expect(parseIsoDuration(bad), bad).toBeUndefined();
  });

  it("reads the short forms for settings, bare numbers as seconds", () => {
    expect(parseSettingDuration("300")).toBe(300_000);
    expect(parseSettingDuration("5m")).toBe(300_000);
    expect(parseSettingDuration("PT5M")).toBe(300_000);
    expect(parseSettingDuration("250ms")).toBe(250);
    expect(parseSettingDuration("0")).toBe(0);
    expect(parseSettingDuration("7d")).toBe(7 * 86_400_000);
    expect(parseSettingDuration("five minutes")).toBeUndefined();
  });

  it("adds months on the calendar", () => {
    expect(addDuration(NOW, parseIsoDuration("P1M")!).toISOString()).toBe("2026-02-28T12:00:00.000Z");
    expect(addDuration(NOW, parseIsoDuration("P1Y")!).toISOString()).toBe("2027-01-31T12:00:00.000Z");
    expect(addDuration(NOW, parseIsoDuration("PT36H")!).toISOString()).toBe("2026-02-02T00:00:00.000Z");
  });
});

describe("expiries", () => {
  it("takes a duration from now or an instant", () => {
    expect(parseExpiry("P1D", NOW)?.toISOString()).toBe("2026-02-01T12:00:00.000Z");
    expect(parseExpiry("2027-03-01T00:00:00Z", NOW)?.toISOString()).toBe("2027-03-01T00:00:00.000Z");
    expect(parseExpiry("2027-03-01T02:00:00+02:00", NOW)?.toISOString()).toBe("2027-03-01T00:00:00.000Z");
    expect(parseExpiry("2027-03-01", NOW)?.toISOString()).toBe("2027-03-01T00:00:00.000Z");
  });

  it("refuses anything else", () => {
    for (const bad of ["tomorrow", "2027-13-01", "2027-03-01T00:00:00", "1700000000", "P"]) expect(parseExpiry(bad, NOW), bad).toBeUndefined();
  });
});

describe("bounds", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  it("refuses durations and instants no store can hold, instead of failing later", () => {
    expect(parseIsoDuration("P999999999999Y")).toBeUndefined();
    expect(parseExpiry("P999999999999Y", now)).toBeUndefined();
    expect(parseExpiry("P99999Y", now)).toBeUndefined();
    expect(parseExpiry("+300000-01-01T00:00:00Z", now)).toBeUndefined();
    expect(parseExpiry("9999-12-31T23:59:59Z", now)?.toISOString()).toBe("9999-12-31T23:59:59.000Z");
    expect(parseExpiry("10000-01-01", now)).toBeUndefined();
    expect(parseExpiry("P7000Y", now)?.getUTCFullYear()).toBe(9026);
  });
});

