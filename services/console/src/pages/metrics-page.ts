import { html, type Html } from "./html.js";
import { expectOkText } from "./operations-parts.js";
import { ApiRefusal, expectOk, type ApiResult, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { chartWindowOf, deploymentCharts, readSeries, windowSwitch } from "./deployment-charts.js";
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

/** The raw table's address: every meter, filtered by service and text, paged by meter. */
const RAW = "/ui/metrics/raw";

/**
 * The deployment at a glance: the gateway's health checks (GET /health/ready, with the detail a
 * manage:read holder gets), the charts of the meters that matter (the admin service's samples,
 * GET /api/metrics/series) and the background work's state. Every meter (GET /metrics: every
 * process's, labelled by service and node) with its description is the raw table at
 * /ui/metrics/raw, filtered by service and text, paged by meter.
 */
export const metricsPage: ConsolePage = {
  slug: "metrics",
  nav: "Metrics",
  needs: "manage:read on *",
  async get(ctx) {
    if (ctx.subpath === "/raw") return rawTable(ctx);
    if (ctx.subpath !== "") throw new ApiRefusal(404, "There is no such Metrics page.");
    const window = chartWindowOf(ctx.query.window);
    const [metricsRes, healthRes, series] = await Promise.all([ctx.api<string>("GET", "/metrics"), ctx.api<Health>("GET", "/health/ready"), readSeries(ctx, window)]);
    const families = parseExposition(expectOkText(metricsRes));
    const health = healthOf(healthRes);
    const background = families.filter((f) => BACKGROUND.test(f.name) && visible(f, undefined).length > 0);
    return {
      kind: "html",
      title: "Metrics",
      main: html`${healthTable(health)}
<section aria-labelledby="charts-h">
<h2 id="charts-h">Requests, errors, latency and storage</h2>
${windowSwitch("/ui/metrics", window)}
${deploymentCharts(series, "metrics")}
</section>
${background.length ? familyTable("background", "Background tasks: walks, webhook delivery, the event outbox", background, undefined) : html`<p>No background task reports a meter.</p>`}
<p class="more"><a href="${RAW}" id="raw-link">Every meter, with its description and value (the raw table of ${families.length} meters)</a></p>`,
    };
  },
};

// 503 is the health answer when something is down: still the page's content, not a failure.
const healthOf = (res: ApiResult<Health>): Health => (res.status === 200 || res.status === 503 ? (res.body as Health) : expectOk(res));

async function rawTable(ctx: PageContext): Promise<PageOutcome> {
  const families = parseExposition(expectOkText(await ctx.api<string>("GET", "/metrics")));
  const services = [...new Set(families.flatMap((f) => f.samples.map((s) => s.labels.service ?? "")))].filter((s) => s !== "").sort();
  const service = services.includes(ctx.query.service ?? "") ? ctx.query.service : undefined;
  const text = (ctx.query.q ?? "").trim().toLowerCase();
  const wanted = families.filter((f) => visible(f, service).length > 0 && (text === "" || f.name.toLowerCase().includes(text) || f.help.toLowerCase().includes(text)));
  // By name, so a page holds a stable run of meters whatever order the processes answered in.
  const sorted = [...wanted].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const start = ctx.query.after ? sorted.findIndex((f) => f.name === ctx.query.after) + 1 : 0;
  const page = sorted.slice(start, start + PAGE);
  const next = start + PAGE < sorted.length ? page[page.length - 1]?.name : undefined;
  return {
    kind: "html",
    title: "Metrics: every meter",
    main: html`<p><a href="/ui/metrics">Back to the charts and health checks</a></p>
<form method="get" action="${RAW}" class="filters" role="search">
<label for="service">Service</label>
<select id="service" name="service"><option value="">every service</option>${services.map((s) => html`<option value="${s}"${s === service ? html` selected` : ""}>${s}</option>`)}</select>
<label for="q">Meter or description</label>
<input id="q" name="q" value="${ctx.query.q ?? ""}" maxlength="100">
<button type="submit">Show</button>
</form>
${familyTable("meters", `Every meter (${sorted.length}${service ? ` of ${service}` : ""})`, page, service)}
${pager({ base: RAW, param: "after", current: ctx.query.after, next, keep: { service, q: ctx.query.q }, label: "meters" })}`,
  };
}
