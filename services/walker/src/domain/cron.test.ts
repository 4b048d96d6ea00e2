import { describe, expect, it } from "vitest";
import { checkSchedule, nextRun } from "./cron.js";

const at = (iso: string) => new Date(iso);

describe("walk schedules", () => {
  it("accepts six fields, seconds first", () => {
    for (const e of ["0 0 3 * * *", "0 0 3 * * 0", "*/2 * * * * *", "0 30 2 1 JAN,JUL ?", "0 0 3 ? * SUN", "15 0 0 L * *", "0 0 4 * * MON-FRI"]) {
      expect(checkSchedule(e), e).toEqual({ ok: true });
    }
  });

  it("refuses five or seven fields, shorthands, hashed fields and out-of-range values, saying why", () => {
    expect(checkSchedule("0 3 * * *")).toEqual({ ok: false, reason: expect.stringContaining("six fields") });
    expect(checkSchedule("0 0 3 * * * 2030")).toEqual({ ok: false, reason: expect.stringContaining("has 7") });
    expect(checkSchedule("")).toEqual({ ok: false, reason: expect.stringContaining("has 0") });
    expect(checkSchedule("@daily").ok).toBe(false);
    expect(checkSchedule("H 0 3 * * *").ok).toBe(false);
    expect(checkSchedule("0 0 3 * * THU")).toEqual({ ok: true });
    expect(checkSchedule("61 * * * * *").ok).toBe(false);
    expect(checkSchedule("0 0 25 * * *").ok).toBe(false);
    expect(checkSchedule("a b c d e f").ok).toBe(false);
  });

  it("refuses steps of zero, steps that are not whole numbers and steps past their field's range, naming the field, never rewriting them", () => {
    const refused: [string, RegExp][] = [
      ["*/0 * * * * *", /step "\/0" in the second field .* at least 1/],
      ["5/0 * * * * *", /step "\/0" in the second field/],
      ["*/-1 * * * * *", /step "\/-1"/],
      ["*/999999 * * * * *", /step "\/999999" in the second field \("\*\/999999"\) is larger than its range 0-59/],
      ["*/9999999999 * * * * *", /step "\/9999999999"/],
      ["*/60 * * * * *", /range 0-59, so it would fire at 0 only: write 0, or a step of at most 59/],
      ["0 */61 * * * *", /minute field/],
      ["0 0 */25 * * *", /hour field .* range 0-23/],
      ["0 0 0 */32 * *", /day-of-month field .* range 1-31/],
      ["0 0 0 1/40 * *", /day-of-month field \("1\/40"\) is larger than its range 1-31/],
      ["0 0 0 * */13 *", /month field .* range 1-12/],
      ["0 0 0 * JAN/13 *", /month field .* range 1-12/],
      ["0 0 0 * * */7", /day-of-week field .* range 0-6/],
      ["0-30/45 * * * * *", /range 0-30/],
      ["0 0 0 * FEB-MAR/2 *", /month field \("FEB-MAR\/2"\) is larger than its range 2-3/],
    ];
    for (const [e, why] of refused) {
      const c = checkSchedule(e);
      expect(c.ok, e).toBe(false);
      expect(!c.ok && c.reason, e).toMatch(why);
    }
    for (const e of ["*/59 * * * * *", "*/30 * * * * *", "0 */15 * * * *", "0 0 */12 * * *", "0 0 0 1/30 * *", "0 0 0 * */6 *", "0 0 0 * JAN-DEC/3 *", "0 0 0 * * */6", "0 0 0 * * MON-FRI/2", "5-5/1 * * * * *", "0 0,30/10 * * * *"]) {
      expect(checkSchedule(e), e).toEqual({ ok: true });
    }
  });

  it("reads the schedule in UTC whatever the process time zone", () => {
    expect(nextRun("0 0 3 * * *", at("2026-03-07T10:00:00Z")).toISOString()).toBe("2026-03-08T03:00:00.000Z");
    expect(nextRun("0 0 3 * * *", at("2026-03-07T02:59:59Z")).toISOString()).toBe("2026-03-07T03:00:00.000Z");
  });

  it("the rebuild default fires on Sundays at 03:00 UTC", () => {
    // 2026-03-07 is a Saturday.
    expect(nextRun("0 0 3 * * 0", at("2026-03-07T10:00:00Z")).toISOString()).toBe("2026-03-08T03:00:00.000Z");
    expect(nextRun("0 0 3 * * 0", at("2026-03-08T03:00:00Z")).toISOString()).toBe("2026-03-15T03:00:00.000Z");
  });

  it("the next run is strictly after the given instant, to the second", () => {
    expect(nextRun("*/2 * * * * *", at("2026-03-07T10:00:00.000Z")).toISOString()).toBe("2026-03-07T10:00:02.000Z");
    expect(nextRun("*/2 * * * * *", at("2026-03-07T10:00:01.999Z")).toISOString()).toBe("2026-03-07T10:00:02.000Z");
    expect(nextRun("30 * * * * *", at("2026-03-07T10:00:30.000Z")).toISOString()).toBe("2026-03-07T10:01:30.000Z");
  });
});
