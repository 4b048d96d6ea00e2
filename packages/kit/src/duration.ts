/**
 * ISO-8601 durations (`P90D`, `PT5M`, `P1Y2M`, `P2W`) and, for settings only, the short
 * forms operators type (`300`, `300s`, `5m`, `1h`, `7d`, `250ms`).
 */
export interface Duration {
  years: number;
  months: number;
  weeks: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

const ISO_RE =
  /^P(?!$)(?:(\d+(?:[.,]\d+)?)Y)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?=\d)(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/i;
const SHORT_RE = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i;

const num = (s: string | undefined) => (s === undefined ? 0 : Number(s.replace(",", ".")));

/** No component beyond this many digits: `P999999999999Y` is not a duration anything can use. */
const MAX_COMPONENT = 100_000_000;

export function parseIsoDuration(text: string): Duration | undefined {
  const m = ISO_RE.exec(text.trim());
  if (!m) return undefined;
  if (m.slice(1).some((c) => c !== undefined && num(c) > MAX_COMPONENT)) return undefined;
  return {
    years: num(m[1]),
    months: num(m[2]),
    weeks: num(m[3]),
    days: num(m[4]),
    hours: num(m[5]),
    minutes: num(m[6]),
    seconds: num(m[7]),
  };
}

const DAY = 86_400_000;
/** Fixed-length conversion (a year 365 days, a month 30): for timeouts and TTLs, not for calendar dates. */
export function durationMs(d: Duration): number {
  return (
    d.years * 365 * DAY +
    d.months * 30 * DAY +
    d.weeks * 7 * DAY +
    d.days * DAY +
    d.hours * 3_600_000 +
    d.minutes * 60_000 +
    d.seconds * 1000
  );
}

/** Adds a duration to an instant on the UTC calendar (P1M from 31 January is the end of February). */
export function addDuration(from: Date, d: Duration): Date {
  const out = new Date(from.getTime());
  if (d.years || d.months) {
    const day = out.getUTCDate();
    out.setUTCDate(1);
    out.setUTCMonth(out.getUTCMonth() + Math.trunc(d.years * 12 + d.months));
    const last = new Date(Date.UTC(out.getUTCFullYear(), out.getUTCMonth() + 1, 0)).getUTCDate();
    out.setUTCDate(Math.min(day, last));
  }
  return new Date(out.getTime() + durationMs({ ...d, years: 0, months: 0 }));
}

/** A setting's duration in ms: ISO-8601, or a number with an optional unit (bare = seconds). */
export function parseSettingDuration(text: string): number | undefined {
  const t = text.trim();
  const iso = parseIsoDuration(t);
  if (iso) return durationMs(iso);
  const m = SHORT_RE.exec(t);
  if (!m) return undefined;
  const n = Number(m[1]);
  switch ((m[2] ?? "s").toLowerCase()) {
    case "ms":
      return n;
    case "s":
      return n * 1000;
    case "m":
      return n * 60_000;
    case "h":
      return n * 3_600_000;
    default:
      return n * DAY;
  }
}

/**
 * The latest instant an expiry may name: the end of year 9999. Postgres stores far later and
 * JavaScript dates end in 275760, but an expiry past this is a typo or an attack, and an
 * instant in year 300000 would fail in the store (a 500) instead of being refused.
 */
export const LATEST_EXPIRY = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const INSTANT_RE = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}))?$/;

/**
 * An expiry given as an ISO-8601 duration from `now` or an absolute instant (a date alone
 * means midnight UTC). Returns undefined for anything else, and for a moment past LATEST_EXPIRY.
 */
export function parseExpiry(text: string, now: Date): Date | undefined {
  const t = text.trim();
  const d = parseIsoDuration(t);
  const at = d ? addDuration(now, d) : INSTANT_RE.test(t) ? new Date(Date.parse(t.length === 10 ? `${t}T00:00:00Z` : t)) : undefined;
  return at && Number.isFinite(at.getTime()) && at.getTime() <= LATEST_EXPIRY ? at : undefined;
}
