import { bytesText } from "@svc/contracts";
import { chartWindowOf, deploymentCharts, errorShare, windowSwitch, type Series } from "./deployment-charts.js";
import { html, type Html } from "./html.js";
import { timeCell } from "./operations-parts.js";
import { expectOk, type ApiResult, type PageContext } from "./page-contract.js";
import { when } from "./page-widgets.js";
import { repositoryPath } from "./repository-view.js";

/**
 * The home page of a person who may read the deployment (manage:read over *): the deployment at a
 * glance, each part linking to its page. A part whose API answer fails says so on its own; the
 * rest of the page still shows.
 */

interface Repository {
  name: string;
  format: string;
  type: string;
  usedBytes: number;
}
interface Publish {
  time: string;
  repository: string;
  path: string;
  size: number;
  actor: string;
}
interface Key {
  id: string;
  label: string | null;
  expires: string | null;
}
interface NodeInfo {
  node: string;
  service: string;
  started: string;
  lastHeard: string;
  status: Record<string, string>;
}
interface Health {
  status: string;
  checks?: Record<string, { status: string; error?: string }>;
}

/** What a node's heartbeat status says when all is well. */
const FINE = new Set(["up", "ok", "set"]);

/** Repositories whose file count is asked for one by one (their detail); the rest are on the Repositories page. */
const LISTED = 20;

type Part<T> = { ok: true; value: T } | { ok: false; why: string };
const part = async <T>(answer: Promise<ApiResult<T>>): Promise<Part<T>> => {
  try {
    return { ok: true, value: expectOk(await answer) };
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  }
};
const unavailable = (why: string) => html`<p class="problem">Not available: ${why}</p>`;

function section(id: string, title: string, link: { href: string; label: string }, body: Html): Html {
  return html`<section class="glance" aria-labelledby="${id}-h" id="${id}">
<h2 id="${id}-h"><a href="${link.href}">${title}</a></h2>
${body}
<p class="more"><a href="${link.href}">${link.label}</a></p>
</section>`;
}

function trafficTable(hour: Series, day: Series): Html {
  const row = (label: string, s: Series) => {
    const share = errorShare(s.totals.requests, s.totals.errors);
    return html`<tr><th scope="row">${label}</th><td class="num">${s.totals.requests}</td><td class="num">${s.totals.errors}</td><td class="num">${share === null ? "" : `${share.toFixed(1)} %`}</td></tr>`;
  };
  return html`<table class="data" id="traffic"><caption>Requests the gateways answered (health probes left out)</caption>
<thead><tr><th scope="col">Span</th><th scope="col">Requests</th><th scope="col">Errors (5xx)</th><th scope="col">Error rate</th></tr></thead>
<tbody>${row("Last hour", hour)}${row("Last day", day)}</tbody></table>`;
}

function storageText(repos: Repository[], day: Series | undefined): Html {
  const total = repos.reduce((a, r) => a + r.usedBytes, 0);
  const known = (day?.points ?? []).filter((p) => p.storageBytes !== null);
  const first = known[0];
  const growth = first ? total - first.storageBytes! : undefined;
  return html`<p id="storage-used"><strong>${bytesText(total)}</strong> used by ${repos.length} ${repos.length === 1 ? "repository" : "repositories"}${
    growth === undefined ? "" : html`; ${growth >= 0 ? "grown by" : "shrunk by"} <strong>${bytesText(Math.abs(growth))}</strong> since ${when(first!.time)}`
  }.</p>`;
}

export async function homeOverview(ctx: PageContext, advisories: number | undefined): Promise<Html> {
  const window = chartWindowOf(ctx.query.window);
  const [hour, day, repos, publishes, keys, nodes, health] = await Promise.all([
    part(ctx.api<Series>("GET", "/api/metrics/series?window=1h")),
    part(ctx.api<Series>("GET", "/api/metrics/series?window=24h")),
    part(ctx.api<Repository[]>("GET", "/api/repositories?limit=500")),
    part(ctx.api<Publish[]>("GET", "/api/metrics/publishes?limit=10")),
    part(ctx.api<Key[]>("GET", "/api/credentials?expiring=P14D&limit=10")),
    part(ctx.api<NodeInfo[]>("GET", "/api/metrics/nodes")),
    // 503 is the health answer when something is down: still an answer.
    ctx.api<Health>("GET", "/health/ready").then((r) => (r.status === 200 || r.status === 503 ? (r.body as Health) : undefined)).catch(() => undefined),
  ]);
  const shown = window === "24h" ? day : hour;
  const files = repos.ok ? await Promise.all(repos.value.slice(0, LISTED).map((r) => fileCount(ctx, r.name))) : [];

  const charts = section(
    "charts",
    "Traffic and storage",
    { href: "/ui/metrics", label: "All meters on the Metrics page" },
    html`${windowSwitch("/ui/", window)}${shown.ok ? deploymentCharts(shown.value, "home") : unavailable(shown.why)}
${hour.ok && day.ok ? trafficTable(hour.value, day.value) : ""}`,
  );

  const repositories = section(
    "repositories-glance",
    "Repositories",
    { href: "/ui/repositories", label: "Every repository" },
    repos.ok
      ? html`${storageText(repos.value, day.ok ? day.value : undefined)}
<table class="data" id="home-repositories"><caption>Repositories and their size${repos.value.length > LISTED ? ` (the first ${LISTED})` : ""}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Format</th><th scope="col">Type</th><th scope="col">Files</th><th scope="col">Size</th></tr></thead>
<tbody>${repos.value.slice(0, LISTED).map((r, i) => html`<tr><th scope="row"><a href="${repositoryPath(r.name)}">${r.name}</a></th><td>${r.format}</td><td>${r.type}</td><td class="num">${files[i] ?? ""}</td><td class="num">${bytesText(r.usedBytes)}</td></tr>`)}</tbody></table>`
      : unavailable(repos.why),
  );

  const recent = section(
    "publishes",
    "Recent publishes",
    { href: "/ui/repositories", label: "Browse the repositories" },
    !publishes.ok
      ? unavailable(publishes.why)
      : publishes.value.length === 0
        ? html`<p>Nothing was published in the kept history.</p>`
        : html`<table class="data" id="recent-publishes"><caption>The latest publishes, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Repository</th><th scope="col">Path</th><th scope="col">Size</th><th scope="col">By</th></tr></thead>
<tbody>${publishes.value.map((p) => html`<tr><td>${timeCell(p.time)}</td><td><a href="${repositoryPath(p.repository)}">${p.repository}</a></td><td><code>${p.path}</code></td><td class="num">${bytesText(p.size)}</td><td><code>${p.actor}</code></td></tr>`)}</tbody></table>`,
  );

  const expiring = section(
    "expiring-keys",
    "Keys expiring soon",
    { href: "/ui/credentials?expiring=soon", label: "The keys expiring soon on the Credentials page" },
    !keys.ok
      ? unavailable(keys.why)
      : keys.value.length === 0
        ? html`<p>No key expires within 14 days.</p>`
        : html`<ul id="expiring">${keys.value.map((k) => html`<li><code>${k.id.slice(0, 12)}</code> ${k.label ? html`“${k.label}”` : ""}: expires ${timeCell(k.expires)}</li>`)}</ul>`,
  );

  const nodeRows = (list: NodeInfo[]) =>
    html`<table class="data" id="nodes"><caption>The deployment is ${health?.status ?? "of unknown health"}${health?.checks ? `: ${Object.entries(health.checks).map(([n, c]) => `${n} ${c.status}`).join(", ")}` : ""}</caption>
<thead><tr><th scope="col">Service</th><th scope="col">Node</th><th scope="col">Health</th><th scope="col">Last heard</th></tr></thead>
<tbody>${list.map((n) => {
      // A node reports each dependency's state (nats: up, redis: down) and facts (bootstrap-key: set): only the rest is a problem.
      const problems = Object.entries(n.status).filter(([, v]) => !FINE.has(v)).map(([k, v]) => `${k}: ${v}`);
      return html`<tr><td>${n.service}</td><td><code>${n.node}</code></td><td>${problems.length ? html`<span class="severity-warning">${problems.join(", ")}</span>` : "ok"}</td><td>${timeCell(n.lastHeard)}</td></tr>`;
    })}</tbody></table>`;
  const nodesPart = section("nodes-glance", "Nodes and their health", { href: "/ui/metrics", label: "Health checks and meters" }, nodes.ok ? nodeRows(nodes.value) : unavailable(nodes.why));

  const posture = section(
    "advisories-glance",
    "Security posture",
    { href: "/ui/posture", label: "The advisories and their remedies" },
    advisories === undefined
      ? html`<p>The posture did not answer.</p>`
      : html`<p id="advisory-count"><strong>${advisories}</strong> ${advisories === 1 ? "security advisory" : "security advisories"}${advisories === 0 ? ": nothing to act on." : "."}</p>`,
  );

  return html`<div class="glances">${posture}${charts}${repositories}${recent}${expiring}${nodesPart}</div>`;
}

/** A repository's file count from its detail; "" when it does not answer. */
async function fileCount(ctx: PageContext, name: string): Promise<string> {
  const r = await ctx.api<{ artifacts?: number }>("GET", `/api/repositories/${encodeURIComponent(name)}`).catch(() => undefined);
  return r?.status === 200 && typeof r.body?.artifacts === "number" ? String(r.body.artifacts) : "";
}

