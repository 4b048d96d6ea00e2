import { CronExpressionParser } from "cron-parser";

/**
 * Walk schedules: cron expressions of exactly six fields, seconds first
 * (`second minute hour day-of-month month day-of-week`), always evaluated in UTC. Names
 * (`JAN`, `SUN`), ranges, lists, steps, `?`, `L` and `#` are accepted; `@daily`-style
 * shorthands and the randomising `H` are not: every replica must compute the same instants.
 */
export type ScheduleCheck = { ok: true } | { ok: false; reason: string };

const NAMES = /\b(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|SUN|MON|TUE|WED|THU|FRI|SAT)\b/g;

export function checkSchedule(expression: string): ScheduleCheck {
  const text = expression.trim();
  const fields = text.split(/\s+/).filter(Boolean);
  if (fields.length !== 6) {
    return { ok: false, reason: `a schedule has six fields (second minute hour day-of-month month day-of-week), this one has ${fields.length}` };
  }
  if (text.includes("@")) return { ok: false, reason: "shorthands such as @daily are not accepted; write the six fields" };
  if (/H/.test(text.toUpperCase().replace(NAMES, ""))) return { ok: false, reason: "the H (hashed) form is not accepted: every replica must compute the same instants" };
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
