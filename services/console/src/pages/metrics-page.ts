import { html, type Html } from "./html.js";
import { expectOkText } from "./operations-parts.js";
import { expectOk, type ConsolePage } from "./page-contract.js";
import { pager } from "./page-widgets.js";
import { parseExposition, type MetricFamily, type Sample } from "./prometheus-text.js";

interface Health {
  status: string;
  checks?: Record<string, { status: string; error?: string }>;
}

const PAGE = 25;
/** Meters that tell the state of the background work (walks, webhook delivery, the event outbox). */
const BACKGROUND = /^svc_(walk_|webhook_events_waiting|webhook_deliveries_open|outbox)/;

function value(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  return Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+$/, "");
}

/** The labels as `service=admin node=… route=…`, service and node first. */
function labelText(s: Sample): string {
  const { service, node, ...rest } = s.labels;
  return [service ? `service=${service}` : "", node ? `node=${node}` : "", ...Object.entries(rest).map(([k, v]) => `${k}=${v}`)].filter((x) => x !== "").join(" ");
}

/** What of a family the page shows: bucket lines add nothing a person reads here; a histogram keeps its count and sum. */
const visible = (f: MetricFamily, service: string | undefined) =>
  f.samples.filter((s) => !s.name.endsWith("_bucket") && (!service || s.labels.service === service));

function familyRows(f: MetricFamily, service: string | undefined): Html {
  const samples = visible(f, service);
  return html`<tr id="metric-${f.name}"><th scope="row" rowspan="${Math.max(samples.length, 1)}"><code>${f.name}</code><br><small>${f.type}</small></th><td rowspan="${Math.max(samples.length, 1)}">${f.help}</td>${
    samples.length === 0 ? html`<td></td><td></td></tr>` : html`<td><code>${labelText(samples[0]!)}${samples[0]!.name !== f.name ? ` (${samples[0]!.name.slice(f.name.length + 1)})` : ""}</code></td><td class="num">${value(samples[0]!.value)}</td></tr>`
  }
${samples.slice(1).map((s) => html`<tr><td><code>${labelText(s)}${s.name !== f.name ? ` (${s.name.slice(f.name.length + 1)})` : ""}</code></td><td class="num">${value(s.value)}</td></tr>`)}`;
}

const familyTable = (id: string, caption: string, families: MetricFamily[], service: string | undefined): Html => html`<table class="data" id="${id}">
<caption>${caption}</caption>
<thead><tr><th scope="col">Meter</th><th scope="col">Description</th><th scope="col">Labels</th><th scope="col">Value</th></tr></thead>
<tbody>
${families.map((f) => familyRows(f, service))}
</tbody>
</table>`;

function healthTable(h: Health): Html {
  if (!h.checks) return html`<p>The deployment is <strong>${h.status}</strong>; the gateway gave no detail of its dependencies.</p>`;
  return html`<table class="data" id="health">
<caption>Health checks: the deployment is ${h.status}</caption>
<thead><tr><th scope="col">Dependency</th><th scope="col">Status</th><th scope="col">Error</th></tr></thead>
<tbody>
${Object.entries(h.checks).map(([name, c]) => html`<tr><th scope="row">${name}</th><td>${c.status}</td><td>${c.error ?? ""}</td></tr>`)}
</tbody>
</table>`;
}

/**
 * The deployment's meters (GET /metrics: every process's, labelled by service and node) with
 * their descriptions, the gateway's health checks (GET /health/ready, with the detail a
 * manage:read holder gets), and the background work's state; filtered by service and text,
 * paged by meter.
 */
export const metricsPage: ConsolePage = {
  slug: "metrics",
  nav: "Metrics",
  needs: "manage:read on *",
  async get(ctx) {
    const [metricsRes, healthRes] = await Promise.all([ctx.api<string>("GET", "/metrics"), ctx.api<Health>("GET", "/health/ready")]);
    const families = parseExposition(expectOkText(metricsRes));
    // 503 is the health answer when something is down: still the page's content, not a failure.
    const health = healthRes.status === 200 || healthRes.status === 503 ? (healthRes.body as Health) : expectOk(healthRes);
    const services = [...new Set(families.flatMap((f) => f.samples.map((s) => s.labels.service ?? "")))].filter((s) => s !== "").sort();
    const service = services.includes(ctx.query.service ?? "") ? ctx.query.service : undefined;
    const text = (ctx.query.q ?? "").trim().toLowerCase();
    const wanted = families.filter((f) => visible(f, service).length > 0 && (text === "" || f.name.toLowerCase().includes(text) || f.help.toLowerCase().includes(text)));
    const background = wanted.filter((f) => BACKGROUND.test(f.name));
    // By name, so a page holds a stable run of meters whatever order the processes answered in.
    const others = wanted.filter((f) => !BACKGROUND.test(f.name)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const start = ctx.query.after ? others.findIndex((f) => f.name === ctx.query.after) + 1 : 0;
    const page = others.slice(start, start + PAGE);
    const next = start + PAGE < others.length ? page[page.length - 1]?.name : undefined;
    return {
      kind: "html",
      title: "Metrics",
      main: html`${healthTable(health)}
<form method="get" action="/ui/metrics" class="filters" role="search">
<label for="service">Service</label>
<select id="service" name="service"><option value="">every service</option>${services.map((s) => html`<option value="${s}"${s === service ? html` selected` : ""}>${s}</option>`)}</select>
<label for="q">Meter or description</label>
<input id="q" name="q" value="${ctx.query.q ?? ""}" maxlength="100">
<button type="submit">Show</button>
</form>
${start === 0 ? (background.length ? familyTable("background", "Background tasks: walks, webhook delivery, the event outbox", background, service) : html`<p>No background task reports a meter${service ? ` on ${service}` : ""}.</p>`) : ""}
${familyTable("meters", `Counters and gauges (${others.length} meters${service ? ` of ${service}` : ""})`, page, service)}
${pager({ base: "/ui/metrics", param: "after", current: ctx.query.after, next, keep: { service, q: ctx.query.q }, label: "meters" })}`,
    };
  },
};
