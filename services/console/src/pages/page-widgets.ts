import type { RightName } from "../domain/person-rights.js";
import { html, type Html } from "./html.js";
import { expectOk, type ApiResult, type PageContext, type PageOutcome } from "./page-contract.js";

/**
 * Pieces the Repositories, Credentials, People and groups and Webhooks pages share: forms that
 * post an action with the anti-forgery token, paging by the API's cursor, and turning an API
 * answer to a change into the page that follows it.
 */

/** Rows per page: small enough that a page of 10,000 keys or files renders at once. */
export const PAGE_SIZE = 50;

export function csrfInput(ctx: PageContext): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;
}

/**
 * A form posting `_action` (and `fields` as hidden inputs) to `to`; `controls`: the visible,
 * labelled inputs. A bare button when there are none. Nothing at all for a person without
 * `needs` (every console form changes something through the API, which takes `manage:write`
 * over `*` unless said otherwise): a viewer sees no form they cannot use.
 */
export function actionForm(
  ctx: PageContext,
  opts: { to: string; action: string; button: string; fields?: Record<string, string>; controls?: Html; className?: string; needs?: RightName },
): Html | "" {
  if (!ctx.may(opts.needs ?? "manage:write")) return "";
  const hidden = Object.entries(opts.fields ?? {}).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return html`<form method="post" action="${opts.to}" class="${opts.className ?? "action"}">${csrfInput(ctx)}<input type="hidden" name="_action" value="${opts.action}">${hidden}${opts.controls ?? ""}<button type="submit">${opts.button}</button></form>`;
}

/** A labelled text input; `id` makes the label's `for` unique on the page. */
export function field(opts: { id: string; name: string; label: string; value?: string; required?: boolean; placeholder?: string; type?: string; hint?: string; autocomplete?: string }): Html {
  return html`<p class="field"><label for="${opts.id}">${opts.label}</label> <input id="${opts.id}" name="${opts.name}" type="${opts.type ?? "text"}" value="${opts.value ?? ""}"${
    opts.required ? html` required` : ""
  }${opts.placeholder ? html` placeholder="${opts.placeholder}"` : ""}${opts.autocomplete ? html` autocomplete="${opts.autocomplete}"` : ""}>${opts.hint ? html` <small>${opts.hint}</small>` : ""}</p>`;
}

/** One page of a list route and the cursor of the next (the API's `X-Next-Cursor`). */
export async function listPage<T>(ctx: PageContext, path: string, query: Record<string, string | undefined>): Promise<{ items: T[]; next?: string }> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") params.set(k, v);
  const qs = params.toString();
  const result = await ctx.api<T[]>("GET", qs ? `${path}?${qs}` : path);
  const items = expectOk(result);
  return { items, next: headerOf(result, "x-next-cursor") };
}

function headerOf(result: ApiResult, name: string): string | undefined {
  const found = Object.entries(result.headers ?? {}).find(([k]) => k.toLowerCase() === name);
  return found?.[1] || undefined;
}

/**
 * "First page" and "Next page" links: `param` carries the cursor, `keep` the other query
 * parameters the page was opened with.
 */
export function pager(opts: { base: string; param: string; current?: string; next?: string; keep?: Record<string, string | undefined>; label?: string }): Html {
  const link = (cursor: string | undefined) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.keep ?? {})) if (v) q.set(k, v);
    if (cursor) q.set(opts.param, cursor);
    const s = q.toString();
    return s ? `${opts.base}?${s}` : opts.base;
  };
  const what = opts.label ?? "page";
  return html`<nav class="pager" aria-label="${`Pages of ${what}`}">${opts.current ? html`<a href="${link(undefined)}">First ${what}</a> ` : ""}${
    opts.next ? html`<a href="${link(opts.next)}" rel="next">Next ${what}</a>` : ""
  }</nav>`;
}

/** An instant as `2025-06-01 14:03 UTC`; "never" for none. */
export function when(iso: string | null | undefined, none = "never"): string {
  if (!iso) return none;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export interface GrantView {
  scope: string;
  tokens: string[];
  expires: string | null;
}

export function grantText(g: GrantView): string {
  return `${g.scope}: ${g.tokens.join(", ")}${g.expires ? ` (until ${when(g.expires)})` : ""}`;
}

/** Right tokens as typed in a form: separated by commas or spaces (`repository:read, cache:read`, or a role). */
export function readTokens(text: string | undefined): string[] {
  return (text ?? "").split(/[\s,]+/).filter((t) => t !== "");
}

/** Why the API refused input it could not use (400, 404, 409), in its own words; undefined for any other answer. */
export function inputRefusal(result: ApiResult): string | undefined {
  if (result.status !== 400 && result.status !== 404 && result.status !== 409) return undefined;
  const b = (result.body ?? {}) as { detail?: string; title?: string };
  return b.detail ?? b.title ?? `HTTP ${result.status}`;
}

/**
 * The page after a change: back to `location` saying `done`, or saying why the API refused
 * input it could not use (400, 404, 409); a refusal of the right itself (403), a lost session
 * (401) and a failure go to the core's pages.
 */
export function afterChange(result: ApiResult, location: string, done: string): PageOutcome {
  const why = inputRefusal(result);
  if (why !== undefined) return { kind: "redirect", location, notice: `Not done: ${why}` };
  expectOk(result);
  return { kind: "redirect", location, notice: done };
}

/** `/ui/<slug>` paths for a name taken from the URL or a form: one encoded segment. */
export const seg = (s: string) => encodeURIComponent(s);
