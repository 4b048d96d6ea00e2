import { CronExpressionParser } from "cron-parser";

/**
 * Walk schedules: cron expressions of exactly six fields, seconds first
 * (`second minute hour day-of-month month day-of-week`), always evaluated in UTC. Names
 * (`JAN`, `SUN`), ranges, lists, steps, `?`, `L` and `#` are accepted; `@daily`-style
 * shorthands and the randomising `H` are not: every replica must compute the same instants.
 */
export type ScheduleCheck = { ok: true } | { ok: false; reason: string };

const NAMES = /\b(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|SUN|MON|TUE|WED|THU|FRI|SAT)\b/g;

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
const FIELDS = [
  { name: "second", lo: 0, hi: 59 },
  { name: "minute", lo: 0, hi: 59 },
  { name: "hour", lo: 0, hi: 23 },
  { name: "day-of-month", lo: 1, hi: 31 },
  { name: "month", lo: 1, hi: 12, names: MONTHS, base: 1 },
  { name: "day-of-week", lo: 0, hi: 6, names: DAYS, base: 0 },
] as const;

/**
 * Steps the parser would take silently in a way the writer cannot have meant: `/0`, a step
 * that is not a whole number, and a step past its range (`/60` on seconds, `/13` on months),
 * which leaves only the range's first value (or, on months, is read as "every month").
 */
function checkSteps(fields: string[]): ScheduleCheck {
  for (const [i, text] of fields.entries()) {
    const f = FIELDS[i]!;
    const value = (v: string) => {
      const at = "names" in f ? (f.names as readonly string[]).indexOf(v.toUpperCase()) : -1;
      return at >= 0 && "base" in f ? at + f.base : Number(v);
    };
    for (const part of text.split(",")) {
      const slash = part.indexOf("/");
      if (slash < 0) continue;
      const [range, step] = [part.slice(0, slash), part.slice(slash + 1)];
      if (!/^\d{1,6}$/.test(step) || Number(step) < 1) {
        return { ok: false, reason: `the step "/${step}" in the ${f.name} field ("${part}") must be a whole number of at least 1` };
      }
      const [from, to] = range === "*" ? [f.lo, f.hi] : range.includes("-") ? range.split("-").map(value) : [value(range), f.hi];
      if (from === undefined || to === undefined || !Number.isFinite(from) || !Number.isFinite(to)) continue; // the parser names what is wrong
      if (Number(step) > Math.max(1, to - from)) {
        return { ok: false, reason: `the step "/${step}" in the ${f.name} field ("${part}") is larger than its range ${from}-${to}, so it would fire at ${from} only: write ${from}, or a step of at most ${Math.max(1, to - from)}` };
      }
    }
  }
  return { ok: true };
}

export function checkSchedule(expression: string): ScheduleCheck {
  const text = expression.trim();
  const fields = text.split(/\s+/).filter(Boolean);
  if (fields.length !== 6) {
    return { ok: false, reason: `a schedule has six fields (second minute hour day-of-month month day-of-week), this one has ${fields.length}` };
  }
  if (text.includes("@")) return { ok: false, reason: "shorthands such as @daily are not accepted; write the six fields" };
  if (/H/.test(text.toUpperCase().replace(NAMES, ""))) return { ok: false, reason: "the H (hashed) form is not accepted: every replica must compute the same instants" };
  const steps = checkSteps(fields);
  if (!steps.ok) return steps;
  try {
    CronExpressionParser.parse(text, { tz: "UTC", currentDate: new Date(0) }).next();
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
  return { ok: true };
}

/** The first instant strictly after `after` at which the schedule fires (UTC). */
export function nextRun(expression: string, after: Date): Date {
  return CronExpressionParser.parse(expression.trim(), { tz: "UTC", currentDate: after }).next().toDate();
}
