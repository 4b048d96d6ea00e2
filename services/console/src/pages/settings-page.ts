import type { SettingChangeRow, SettingNodeValue as NodeValue, SettingRow, SettingsTable } from "@svc/contracts";
import { inlineMarkdown } from "./inline-markdown.js";
import { html, type Html } from "./html.js";
import { expectOk, type ConsolePage, type PageContext } from "./page-contract.js";
import { actionForm, afterChange, field, pager, seg, when } from "./page-widgets.js";


const PAGE = 25;
const ORIGIN: Record<NodeValue["from"], string> = { default: "default", environment: "environment", "-D": "-D system property", file: "properties file" };

/** A node's value as shown: a secret only as set or not set; a blank value says so. */
function shown(row: SettingRow, v: NodeValue): Html {
  if (row.secret) return html`<em>${v.set ? "set" : "not set"}</em>`;
  return v.value === undefined || v.value === "" ? html`<em>blank</em>` : html`<code>${v.value}</code>`;
}

function values(row: SettingRow): Html {
  const first = row.nodes[0];
  const same = first && row.nodes.every((n) => n.from === first.from && n.set === first.set && n.value === first.value);
  if (first && same) {
    const services = [...new Set(row.nodes.map((n) => n.service))].join(", ");
    return html`${shown(row, first)} <span class="origin">from ${ORIGIN[first.from]}</span> <span class="on">on ${row.nodes.length === 1 ? "the one node" : `all ${row.nodes.length} nodes`} (${services})</span>`;
  }
  return html`<ul class="per-node">${row.nodes.map((n) => html`<li><code>${n.node}</code>: ${shown(row, n)} <span class="origin">from ${ORIGIN[n.from]}</span></li>`)}</ul>`;
}

const SETTINGS_PAGE = "/ui/settings";
const HISTORY = 20;

/** Settings whose value is several lines (one endpoint a line): a text area rather than a field. */
const MULTI_LINE = new Set(["svc.webhook-endpoints", "svc.webhook-secrets"]);
/** Settings that may be overridden for one tenant (kit TENANT_SETTINGS): their form takes a tenant too. */
const PER_TENANT = new Set(["svc.malware-action", "svc.vulnerability-action", "svc.vulnerability-threshold", "svc.deny-list-action", "svc.gate.min-age"]);
/** The Deploy module's switch: shown under Modules, not in the table. */
const DEPLOY = "svc.ui.deploy";

/** A run-time setting's live value as shown: a secret only as set or not set; a masked one as masked. */
function liveValue(r: SettingRow): Html {
  if (r.secret) return html`<em>${r.set ? "set" : "not set"}</em>`;
  return r.value === undefined ? html`<em>set</em>` : r.value === "" ? html`<em>blank</em>` : html`<code>${r.value}</code>`;
}

/**
 * The controls that change one setting. A secret's field starts empty and is never filled in
 * (write-only); the endpoint list is shown masked, so its field starts empty too (a masked URL
 * sent back would replace the real one): the whole new list is entered.
 */
function valueControls(r: SettingRow, short: string): Html {
  const id = `value-${short}`;
  const label = `New value of ${r.name}`;
  const masked = r.secret || r.name === "svc.webhook-endpoints";
  const hint = r.secret ? "write-only: the value is never shown; enter the whole new value (one “URL secret” a line)" : masked ? "the URLs are shown masked: enter the whole new list (one “URL events” a line)" : "";
  const input = MULTI_LINE.has(r.name)
    ? html`<p class="field"><label for="${id}">${label}</label> <textarea id="${id}" name="value" rows="4" cols="60" autocomplete="off" spellcheck="false">${masked ? "" : (r.value ?? "")}</textarea>${hint ? html` <small>${hint}</small>` : ""}</p>`
    : field({ id, name: "value", label, value: r.value ?? "", required: true });
  const tenant = PER_TENANT.has(r.name) ? field({ id: `tenant-${short}`, name: "tenant", label: "For tenant (blank: the deployment)", hint: "an override for one tenant wins over the deployment's value" }) : "";
  return html`${input}${tenant}`;
}

function overrides(r: SettingRow): Html {
  if (!r.tenants || r.tenants.length === 0) return html``;
  return html`<ul class="per-tenant">${r.tenants.map((t) => html`<li>tenant <code>${t.tenant}</code>: <code>${t.value}</code></li>`)}</ul>`;
}

/** The run-time settings: each one's live value and a form to change it, or where the operator fixed it. */
function runtimeSection(ctx: PageContext, rows: SettingRow[]): Html {
  return html`<table class="data" id="runtime-settings">
<caption>Settings that change at run time</caption>
<thead><tr><th scope="col">Setting</th><th scope="col">Live value</th><th scope="col">Change</th></tr></thead>
<tbody>
${rows.map((r) => {
  const short = r.name.replace(/^svc\./, "");
  const change = r.fixed
    ? html`<strong>fixed</strong> at start (${r.fixedAt ?? "by the operator"}): change it there and restart`
    : actionForm(ctx, { to: SETTINGS_PAGE, action: "set", button: "Change", fields: { name: short }, controls: valueControls(r, short) });
  return html`<tr id="runtime-${short}"><th scope="row"><code>${r.name}</code></th><td>${liveValue(r)}${overrides(r)}</td><td>${change}</td></tr>`;
})}
</tbody>
</table>`;
}

/** Modules: the Deploy action's switch (svc.ui.deploy), on or off without a restart. */
function modulesSection(ctx: PageContext, deploy: SettingRow | undefined): Html {
  if (!deploy) return html``;
  const on = deploy.value === "true";
  const change = deploy.fixed
    ? html`<strong>fixed</strong> at start (${deploy.fixedAt ?? "by the operator"}): change it there and restart`
    : actionForm(ctx, { to: SETTINGS_PAGE, action: "set", button: on ? "Switch off" : "Switch on", fields: { name: "ui.deploy", value: on ? "false" : "true" } });
  return html`<table class="data" id="modules">
<caption>Modules</caption>
<thead><tr><th scope="col">Module</th><th scope="col">State</th><th scope="col">What it does</th><th scope="col">Change</th></tr></thead>
<tbody>
<tr id="module-deploy"><th scope="row">Deploy</th><td><strong>${on ? "on" : "off"}</strong></td><td>Publishing one file from the browser (a repository's page), under the signed-in person's rights (<code>${DEPLOY}</code>)</td><td>${change}</td></tr>
</tbody>
</table>`;
}

function historySection(changes: SettingChangeRow[]): Html {
  if (changes.length === 0) return html`<p id="setting-changes">No run-time setting has been changed.</p>`;
  const shownValue = (v: string | null) => (v === null ? html`<em>secret</em>` : v === "" ? html`<em>blank</em>` : html`<code>${v}</code>`);
  return html`<table class="data" id="setting-changes">
<caption>Latest changes (newest first)</caption>
<thead><tr><th scope="col">When</th><th scope="col">Setting</th><th scope="col">Old value</th><th scope="col">New value</th><th scope="col">By</th></tr></thead>
<tbody>
${changes.map(
  (c) =>
    html`<tr><td>${when(c.at)}</td><td><code>${c.name}</code>${c.tenant === undefined ? "" : html` for tenant <code>${c.tenant}</code>`}</td><td>${shownValue(c.oldValue)}</td><td>${
      c.tenant !== undefined && c.newValue === null ? html`<em>override removed</em>` : shownValue(c.newValue)
    }</td><td><code>${c.principal}</code></td></tr>`,
)}
</tbody>
</table>`;
}

/**
 * Every setting in force on each node (GET /api/settings), where its value came from and
 * whether the nodes reading it agree; secrets only as set or not set. The settings that change
 * at run time have a form each (PUT /api/settings/<name>, manage:write) unless the operator
 * fixed them at start, and their latest changes are listed (GET /api/settings/changes).
 */
export const settingsPage: ConsolePage = {
  slug: "settings",
  nav: "Settings",
  needs: "manage:read on *",
  async get(ctx) {
    const t = expectOk(await ctx.api<SettingsTable>("GET", "/api/settings"));
    const runtime = t.settings.filter((r) => r.runtime === true && r.name !== DEPLOY);
    const deploy = t.settings.find((r) => r.runtime === true && r.name === DEPLOY);
    const changes = runtime.length === 0 && !deploy ? [] : expectOk(await ctx.api<{ changes: SettingChangeRow[] }>("GET", `/api/settings/changes?limit=${HISTORY}`)).changes;
    const text = (ctx.query.q ?? "").trim().toLowerCase();
    const onlyDiffering = ctx.query.differ === "on";
    const matching = t.settings.filter(
      (r) => (!onlyDiffering || !r.agree) && (text === "" || r.name.toLowerCase().includes(text) || r.environment.toLowerCase().includes(text) || r.description.toLowerCase().includes(text)),
    );
    // The catalog's order; the cursor is the last setting name shown.
    const start = ctx.query.after ? matching.findIndex((r) => r.name === ctx.query.after) + 1 : 0;
    const shownRows = matching.slice(start, start + PAGE);
    const next = start + PAGE < matching.length ? shownRows[shownRows.length - 1]?.name : undefined;
    const differing = t.settings.filter((r) => !r.agree).length;
    return {
      kind: "html",
      title: "Settings",
      main: html`<p>The settings each of the ${t.nodes.length} nodes runs with, as the nodes report them (${t.nodes.map((n) => n.node).join(", ")}). ${
        differing === 0 ? "Every node reading a setting agrees with the others." : html`<strong>${differing} ${differing === 1 ? "setting differs" : "settings differ"} between nodes.</strong>`
      } A setting read at start only is changed where it is set (environment, <code>-D</code> argument or properties file), then restart.</p>
${modulesSection(ctx, deploy)}
${runtime.length === 0 && !deploy ? "" : html`${runtime.length === 0 ? "" : runtimeSection(ctx, runtime)}${historySection(changes)}`}
<form method="get" action="/ui/settings" class="filters" role="search">
<label for="q">Setting or text</label>
<input id="q" name="q" value="${ctx.query.q ?? ""}" maxlength="100">
<label><input type="checkbox" name="differ" value="on"${onlyDiffering ? html` checked` : ""}> Only settings the nodes disagree on</label>
<button type="submit">Show</button>
</form>
<table class="data" id="settings">
<caption>Settings in force (${matching.length} of ${t.settings.length})</caption>
<thead><tr><th scope="col">Setting</th><th scope="col">Value and origin</th><th scope="col">Nodes agree</th><th scope="col">What it does</th></tr></thead>
<tbody>
${shownRows.map(
  (r) => html`<tr id="setting-${r.name}"><th scope="row"><code>${r.name}</code><br><small><code>${r.environment}</code>${r.secret ? " · secret" : ""}</small></th><td>${values(r)}</td><td>${r.perProcess ? html`<span class="per-process">per process</span>` : r.agree ? "yes" : html`<strong>no</strong>`}</td><td>${inlineMarkdown(r.description)}</td></tr>`,
)}
</tbody>
</table>
${matching.length === 0 ? html`<p>No setting matches.</p>` : ""}
${pager({ base: "/ui/settings", param: "after", current: ctx.query.after, next, keep: { q: ctx.query.q, differ: onlyDiffering ? "on" : undefined }, label: "settings" })}`,
    };
  },
  actions: {
    async set(ctx) {
      const name = (ctx.form.name ?? "").trim();
      const value = ctx.form.value ?? "";
      const tenant = (ctx.form.tenant ?? "").trim();
      const path = `/api/settings/${seg(name)}${tenant === "" ? "" : `?tenant=${encodeURIComponent(tenant)}`}`;
      return afterChange(await ctx.api("PUT", path, { value }), SETTINGS_PAGE, tenant === "" ? `${name} changed` : `${name} changed for tenant ${tenant}`);
    },
  },
};
