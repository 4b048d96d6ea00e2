import type { NodeLogEntry as LogEntry, LogsPage } from "@svc/contracts";
import { html, type Html } from "./html.js";
import { expectOk, type ConsolePage, type PageContext } from "./page-contract.js";


/** An entry as the page shows it (and as the follow script receives it): the fields besides the usual ones as one line. */
export interface LogRow {
  time: string;
  level: string;
  service: string;
  node: string;
  msg: string;
  fields: string;
}

const LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];
const SERVICES = ["gateway", "auth", "artifacts", "admin", "walker", "notifier", "console"];
const LIMITS = ["50", "100", "200", "500"];
const SHOWN = new Set(["seq", "node", "service", "time", "level", "msg"]);
const MAX_FIELDS = 600;

export function logRow(e: LogEntry): LogRow {
  const rest = Object.fromEntries(Object.entries(e).filter(([k]) => !SHOWN.has(k)));
  const text = Object.keys(rest).length ? JSON.stringify(rest) : "";
  return { time: e.time, level: e.level, service: e.service, node: e.node, msg: e.msg, fields: text.length > MAX_FIELDS ? `${text.slice(0, MAX_FIELDS)}…` : text };
}

/** The filters as /api/logs takes them, from the page's query (unknown values dropped: the form offers only these). */
function filters(query: Record<string, string>): { level?: string; q?: string; service?: string; limit: string } {
  // A level in any case (`warn`, `Warn`): people type it as they read it.
  const level = (query.level ?? "").trim().toUpperCase();
  return {
    level: LEVELS.includes(level) ? level : undefined,
    q: query.q ? query.q.slice(0, 200) : undefined,
    service: SERVICES.includes(query.service ?? "") ? query.service : undefined,
    limit: LIMITS.includes(query.limit ?? "") ? query.limit! : "100",
  };
}

async function fetchLogs(ctx: PageContext, after?: string): Promise<{ rows: LogRow[]; next: string }> {
  const f = filters(ctx.query);
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  if (after) q.set("after", after);
  const page = expectOk(await ctx.api<LogsPage>("GET", `/api/logs?${q}`));
  return { rows: page.entries.map(logRow), next: page.next };
}

const select = (id: string, label: string, values: string[], chosen: string | undefined, any?: string): Html => html`<label for="${id}">${label}</label>
<select id="${id}" name="${id}">
${any === undefined ? "" : html`<option value="">${any}</option>`}
${values.map((v) => html`<option value="${v}"${v === chosen ? html` selected` : ""}>${v}</option>`)}
</select>`;

export const rowHtml = (r: LogRow): Html =>
  html`<tr class="level-${r.level.toLowerCase()}"><td><time datetime="${r.time}">${r.time}</time></td><td>${r.level}</td><td>${r.service}</td><td><code>${r.node}</code></td><td>${r.msg}</td><td><code class="fields">${r.fields}</code></td></tr>`;

/**
 * The deployment's recent log entries (every process's in-memory ring, through /api/logs),
 * filtered by level, text and service. The page's script follows new entries by asking this
 * page for `?format=json&after=<cursor>` with the same filters.
 */
export const logsPage: ConsolePage = {
  slug: "logs",
  nav: "Logs",
  needs: "manage:read on *",
  async get(ctx) {
    if (ctx.query.format === "json") return { kind: "json", body: await fetchLogs(ctx, ctx.query.after || undefined) };
    const f = filters(ctx.query);
    const { rows, next } = await fetchLogs(ctx);
    return {
      kind: "html",
      title: "Logs",
      scripts: ["logs-follow.js"],
      main: html`<form method="get" action="/ui/logs" class="filters" role="search">
${select("level", "Level (and above)", LEVELS, f.level, "any level")}
${select("service", "Service", SERVICES, f.service, "every service")}
<label for="q">Text</label>
<input id="q" name="q" value="${f.q ?? ""}" maxlength="200">
${select("limit", "Entries", LIMITS, f.limit)}
<button type="submit">Show</button>
</form>
<p><label><input type="checkbox" id="follow" data-next="${next}"> Follow new entries as they come</label> <span id="follow-state" role="status"></span></p>
<table class="data" id="log-entries">
<caption>The newest ${rows.length} entries, oldest first</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Level</th><th scope="col">Service</th><th scope="col">Node</th><th scope="col">Message</th><th scope="col">Fields</th></tr></thead>
<tbody>
${rows.map(rowHtml)}
</tbody>
</table>
${rows.length === 0 ? html`<p id="no-entries">No entry matches.</p>` : ""}`,
    };
  },
};
