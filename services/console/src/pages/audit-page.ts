import type { AuditEntryView } from "@svc/contracts";
import { html, type Html } from "./html.js";
import { expectOk, type ConsolePage, type PageContext } from "./page-contract.js";
import { inputRefusal, pager, when } from "./page-widgets.js";

/** An entry of GET /api/audit as the page reads it. */
type AuditEntry = AuditEntryView;

const FILTERS = ["actor", "action", "q", "since", "until"] as const;
const FILTER_FIELDS: { id: (typeof FILTERS)[number]; label: string; placeholder: string }[] = [
  { id: "actor", label: "Actor", placeholder: "key id or label, person" },
  { id: "action", label: "Action", placeholder: "key.issue, key, repository" },
  { id: "q", label: "Text", placeholder: "object, path, detail" },
  { id: "since", label: "Since", placeholder: "2026-11-29" },
  { id: "until", label: "Until", placeholder: "2026-11-30T12:00Z" },
];
const LIMITS = ["10", "25", "50", "100", "200", "500"];
const MAX_DETAIL = 400;

/** The filters as /api/audit takes them, from the page's query (the API checks each and names a bad one). */
function filters(query: Record<string, string>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const f of FILTERS) out[f] = query[f]?.trim() ? query[f]!.trim().slice(0, 300) : undefined;
  out.limit = LIMITS.includes(query.limit ?? "") ? query.limit : "50";
  return out;
}

function actorText(a: AuditEntry["actor"]): Html {
  const who = a.kind === "key" ? html`key <code title="${a.id}">${a.id.slice(0, 12)}…</code>` : html`${a.kind} <code>${a.id}</code>`;
  return a.label ? html`${who} <q>${a.label}</q>` : who;
}

function detailText(detail: unknown): string {
  if (detail === null || detail === undefined) return "";
  const text = JSON.stringify(detail);
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}

const rowHtml = (e: AuditEntry): Html =>
  html`<tr><td><time datetime="${e.at}">${when(e.at)}</time></td><td>${actorText(e.actor)}</td><td><code>${e.address ?? ""}</code></td><td><code>${e.action}</code></td><td>${e.object ?? ""}</td><td><code class="fields">${e.method} ${e.path}</code> <code class="fields">${detailText(e.detail)}</code></td></tr>`;

async function fetchPage(ctx: PageContext, f: Record<string, string | undefined>): Promise<{ entries: AuditEntry[]; next?: string; refused?: string }> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  if (ctx.query.after) q.set("after", ctx.query.after);
  const result = await ctx.api<{ entries: AuditEntry[] }>("GET", `/api/audit?${q}`);
  // A filter the API cannot read (a date that is not one): said on the page, beside the form.
  const refused = result.status === 400 ? inputRefusal(result) : undefined;
  if (refused !== undefined) return { entries: [], refused };
  const body = expectOk(result);
  const next = Object.entries(result.headers ?? {}).find(([k]) => k.toLowerCase() === "x-next-cursor")?.[1];
  return { entries: body.entries, next: next || undefined };
}

/**
 * The audit trail (GET /api/audit): every change made through the API, newest first, searched by
 * actor, action, text and time, a page at a time.
 */
export const auditPage: ConsolePage = {
  slug: "audit",
  nav: "Audit",
  needs: "manage:read on *",
  async get(ctx) {
    const f = filters(ctx.query);
    const { entries, next, refused } = await fetchPage(ctx, f);
    return {
      kind: "html",
      title: "Audit",
      main: html`<p>Every change made through the API or this console: who made it, from which address, what it was and when. Kept for <code>svc.audit-retention</code>.</p>
<form method="get" action="/ui/audit" class="filters" role="search">
${FILTER_FIELDS.map((x) => html`<label for="${x.id}">${x.label}</label>
<input id="${x.id}" name="${x.id}" value="${f[x.id] ?? ""}" maxlength="300" placeholder="${x.placeholder}">
`)}<label for="limit">Entries</label>
<select id="limit" name="limit">${LIMITS.map((v) => html`<option value="${v}"${v === f.limit ? html` selected` : ""}>${v}</option>`)}</select>
<button type="submit">Search</button>
</form>
${refused === undefined ? "" : html`<p class="problem" role="alert" id="audit-refused">${refused}</p>`}
<table class="data" id="audit-entries">
<caption>${entries.length === 1 ? "1 entry" : `${entries.length} entries`}, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">From</th><th scope="col">Action</th><th scope="col">Object</th><th scope="col">Request</th></tr></thead>
<tbody>
${entries.map(rowHtml)}
</tbody>
</table>
${entries.length === 0 && refused === undefined ? html`<p id="no-entries">No entry matches.</p>` : ""}
${pager({ base: "/ui/audit", param: "after", current: ctx.query.after, next, keep: f, label: "entries" })}`,
    };
  },
};
