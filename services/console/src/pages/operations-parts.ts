import { html, type Html } from "./html.js";
import { ApiRefusal, expectOk, type ApiResult } from "./page-contract.js";

/** Pieces the operations pages (Metrics, Walks) share besides page-widgets.ts: instants read in UTC, and text answers' refusals. */

/** expectOk for a route that answers text (GET /metrics refuses in plain text too): the refusal's sentence becomes the reason. */
export function expectOkText(result: ApiResult): string {
  if (result.status >= 400 && typeof result.body === "string") {
    const reference = /Reference: (\S+)/.exec(result.body)?.[1];
    throw new ApiRefusal(result.status, result.body.trim() || `HTTP ${result.status}`, reference);
  }
  return String(expectOk(result));
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const pad = (n: number) => String(n).padStart(2, "0");

/** "in 3 h 12 min" / "5 min ago": how far an instant is from now, roughly. */
export function fromNow(then: Date, now: Date = new Date()): string {
  const ms = then.getTime() - now.getTime();
  const abs = Math.abs(ms);
  const parts: string[] = [];
  const d = Math.floor(abs / 86_400_000);
  const h = Math.floor((abs % 86_400_000) / 3_600_000);
  const m = Math.floor((abs % 3_600_000) / 60_000);
  if (d > 0) parts.push(`${d} d`);
  if (h > 0 && d < 7) parts.push(`${h} h`);
  if (d === 0 && (m > 0 || h === 0)) parts.push(abs < 60_000 ? `${Math.max(1, Math.round(abs / 1000))} s` : `${m} min`);
  return ms >= 0 ? `in ${parts.join(" ")}` : `${parts.join(" ")} ago`;
}

/** An instant as a person reads it, in UTC (the walker's schedules are UTC): "Mon 24 Nov 2026, 14:00:00 UTC (in 37 min)". */
export function readableInstant(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const day = `${DAYS[t.getUTCDay()]} ${t.getUTCDate()} ${MONTHS[t.getUTCMonth()]} ${t.getUTCFullYear()}`;
  return `${day}, ${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())} UTC (${fromNow(t, now)})`;
}

/** A `<time>` element with the readable text. */
export function timeCell(iso: string | null | undefined, now?: Date): Html | "" {
  if (!iso) return "";
  return html`<time datetime="${iso}">${readableInstant(iso, now)}</time>`;
}
