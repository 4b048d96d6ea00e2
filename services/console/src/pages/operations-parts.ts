import { html, type Html } from "./html.js";
import { ApiRefusal, expectOk, type ApiResult, type PageContext, type PageOutcome } from "./page-contract.js";

/** Pieces the operations pages (Metrics, Logs, Caches, Walks, Settings) share. */

/** The anti-forgery field every form carries. */
export function csrfField(ctx: Pick<PageContext, "csrf">): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;
}

/** A page's URL with these query parameters (blank ones left out). */
export function pageUrl(path: string, query: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** The "next page" link of a paged table, keeping the page's filters; nothing on the last page. */
export function nextPageLink(path: string, query: Record<string, string | undefined>, next: string | undefined, label = "Next page"): Html | "" {
  if (!next) return "";
  return html`<p class="pager"><a rel="next" href="${pageUrl(path, { ...query, after: next })}">${label}</a></p>`;
}

/** The body of a 2xx answer, or the refusal's reason as a value, for a form action that shows it as a notice (400, 404, 409) rather than as an error page. */
export function refusalNotice(result: ApiResult): string | undefined {
  if (result.status >= 200 && result.status < 300) return undefined;
  // 401, 403 and failures are the core's to render (sign-in, the 403 page, the error page).
  if (![400, 404, 409, 413, 422].includes(result.status)) {
    const b = (result.body ?? {}) as { title?: string; detail?: string; reference?: string };
    throw new ApiRefusal(result.status, b.detail ?? b.title ?? `HTTP ${result.status}`, b.reference);
  }
  const b = (result.body ?? {}) as { title?: string; detail?: string };
  return b.detail ?? b.title ?? `refused (HTTP ${result.status})`;
}

/** expectOk for a route that answers text (GET /metrics refuses in plain text too): the refusal's sentence becomes the reason. */
export function expectOkText(result: ApiResult): string {
  if (result.status >= 400 && typeof result.body === "string") {
    const reference = /Reference: (\S+)/.exec(result.body)?.[1];
    throw new ApiRefusal(result.status, result.body.trim() || `HTTP ${result.status}`, reference);
  }
  return String(expectOk(result));
}

/** After a form action: back to the page, with what happened. */
export function back(location: string, notice: string): PageOutcome {
  return { kind: "redirect", location, notice };
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
