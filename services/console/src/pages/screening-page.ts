import type { SettingsTable } from "@svc/contracts";
import { html } from "./html.js";
import { expectOk, type ConsolePage } from "./page-contract.js";
import { PAGE_SIZE, actionForm, afterChange, field, listPage, pager, when } from "./page-widgets.js";

const BASE = "/ui/screening";

interface SourceView {
  source: string;
  state: string;
  records: number;
  loaded: string | null;
  error: string | null;
}
interface StatusView {
  sources: SourceView[];
  loaded: string | null;
  ageSeconds: number | null;
  failed: number;
}
interface HeldView {
  id: string;
  repository: string;
  path: string;
  reason: string;
  held: string | null;
  downloads: number;
}
interface FindingView {
  id: string;
  repository: string;
  path: string;
  name: string;
  version: string;
  type: string;
  level: string | null;
  advisory: string;
  summary: string;
  action: string;
  found: string;
  dataLoaded: string | null;
  downloads: number;
  lastDownloaded: string | null;
  status: string;
  triagedBy: string | null;
  triaged: string | null;
  note: string | null;
  downloaders: number;
  downloadedBy: { principal: string; first: string; last: string; downloads: number }[];
}
/** A refused version as GET /api/refusals answers it (every field a string). */
type RefusalView = Record<"id" | "repository" | "path" | "name" | "version" | "reason" | "principal" | "refused", string>;
/** A deny list entry as GET /api/deny-list answers it (every field a string). */
type DenyView = Record<"id" | "ecosystem" | "name" | "versions" | "reason" | "createdBy" | "created", string>;
/** A cooldown allow as GET /api/gate/allows answers it (repository and version null: every one). */
type AllowView = Record<"id" | "ecosystem" | "name" | "reason" | "createdBy" | "created", string> & Record<"repository" | "version", string | null>;

const age = (seconds: number | null) => (seconds === null ? "no data loaded yet" : seconds < 120 ? `${seconds} s old` : seconds < 7200 ? `${Math.round(seconds / 60)} min old` : `${Math.round(seconds / 3600)} h old`);
const REPOSITORY = /^[A-Za-z0-9._-]{1,100}$/;

/**
 * The screening gate (docs/administration/screening.md): the advisory data's state, held files
 * (release, discard), findings per repository, the deny list (add, remove), and the cooldown
 * (svc.gate.min-age, break-glass allows).
 */
export const screeningPage: ConsolePage = {
  slug: "screening",
  nav: "Screening",
  needs: "manage:read on * (manage:write to release, discard or change the deny list and the cooldown)",

  async get(ctx) {
    const repository = REPOSITORY.test(ctx.query.repository ?? "") ? ctx.query.repository! : "";
    const findingStatus = STATUSES.includes(ctx.query.status ?? "") ? ctx.query.status! : "";
    const [status, held, findings, refusals, deny, allows, settings] = await Promise.all([
      ctx.api<StatusView>("GET", "/api/advisories/status").then(expectOk),
      listPage<HeldView>(ctx, "/api/held", { limit: String(PAGE_SIZE), after: ctx.query.held, repository: repository || undefined }),
      listPage<FindingView>(ctx, "/api/findings", { limit: String(PAGE_SIZE), after: ctx.query.after, repository: repository || undefined, status: findingStatus || undefined }),
      listPage<RefusalView>(ctx, "/api/refusals", { limit: String(PAGE_SIZE), after: ctx.query.refused, repository: repository || undefined }),
      listPage<DenyView>(ctx, "/api/deny-list", { limit: String(PAGE_SIZE) }),
      listPage<AllowView>(ctx, "/api/gate/allows", { limit: String(PAGE_SIZE) }),
      ctx.api<SettingsTable>("GET", "/api/settings").then(expectOk),
    ]);
    const minAge = settings.settings.find((r) => r.name === MIN_AGE);
    const here = backOf(repository, findingStatus);
    const main = html`
      <section aria-labelledby="advisories-heading">
        <h2 id="advisories-heading">Advisory data</h2>
        <p>${status.sources.length ? html`The data is ${age(status.ageSeconds)}.${status.failed ? html` <strong class="badge warning">${status.failed} source${status.failed > 1 ? "s" : ""} could not be read</strong>: the gate goes on with the last good data.` : ""}` : html`No sources: set <code>svc.advisories.sources</code>. Without advisory data only the deny list is checked.`}</p>
        <table class="list" id="sources">
          <thead><tr><th scope="col">Source</th><th scope="col">State</th><th scope="col">Records</th><th scope="col">Loaded</th><th scope="col">Error</th></tr></thead>
          <tbody>${status.sources.map((s) => html`<tr><td><code>${s.source}</code></td><td>${s.state === "failed" ? html`<strong class="badge warning">failed</strong>` : s.state}</td><td>${s.records}</td><td>${when(s.loaded)}</td><td>${s.error ?? ""}</td></tr>`)}</tbody>
        </table>
      </section>
      <form method="get" action="${BASE}" class="filter">${field({ id: "screening-repository", name: "repository", label: "Repository", value: repository, hint: "blank: every repository" })}
        <p class="field"><label for="screening-status">Findings</label> <select id="screening-status" name="status"><option value="">every status</option>${STATUSES.map((v) => html`<option value="${v}"${v === findingStatus ? " selected" : ""}>${v}</option>`)}</select></p>
        <button type="submit">Show</button></form>
      <section aria-labelledby="held-heading">
        <h2 id="held-heading">Held versions</h2>
        <p>Not served and not listed to clients until released. Discarding removes the file.</p>
        <table class="list" id="held">
          <thead><tr><th scope="col">Repository</th><th scope="col">Path</th><th scope="col">Why</th><th scope="col">Held</th><th scope="col">Downloads</th><th scope="col">Release</th><th scope="col">Discard</th></tr></thead>
          <tbody>${
            held.items.length
              ? held.items.map(
                  (h) => html`<tr><td>${h.repository}</td><td><code>${h.path}</code></td><td>${h.reason}</td><td>${when(h.held)}</td><td>${h.downloads}</td>
                    <td>${actionForm(ctx, { to: here, action: "release", button: "Release", fields: { id: h.id } })}</td>
                    <td>${actionForm(ctx, { to: here, action: "discard", button: "Discard", fields: { id: h.id } })}</td></tr>`,
                )
              : html`<tr><td colspan="7">Nothing is held.</td></tr>`
          }</tbody>
        </table>
        ${pager({ base: BASE, param: "held", current: ctx.query.held, next: held.next, keep: { repository }, label: "held versions" })}
      </section>
      <section aria-labelledby="findings-heading">
        <h2 id="findings-heading">Findings</h2>
        <p>Confirm a finding that is a real problem (its file is held); dismiss one that is not. Downloaded by: who has the file already.</p>
        <table class="list" id="findings">
          <thead><tr><th scope="col">Found</th><th scope="col">Repository</th><th scope="col">Package</th><th scope="col">Type</th><th scope="col">Advisory</th><th scope="col">Action</th><th scope="col">Downloaded by</th><th scope="col">Data from</th><th scope="col">Status</th></tr></thead>
          <tbody>${
            findings.items.length
              ? findings.items.map(
                  (f) => html`<tr><td>${when(f.found)}</td><td>${f.repository}</td><td><code>${f.name}@${f.version}</code><br><small>${f.path}</small></td>
                    <td>${f.type}${f.level ? html` <small>${f.level}</small>` : ""}</td><td>${f.advisory}<br><small>${f.summary}</small></td><td>${f.action}</td>
                    <td>${downloadedBy(f)}</td><td>${when(f.dataLoaded, "unknown")}</td>
                    <td>${
                      f.status === "open"
                        ? html`open ${actionForm(ctx, { to: here, action: "confirm", button: "Confirm", fields: { id: f.id } })} ${actionForm(ctx, { to: here, action: "dismiss", button: "Dismiss", fields: { id: f.id } })}`
                        : html`${f.status}<br><small>${f.triagedBy ?? ""} ${when(f.triaged)}${f.note ? html`: ${f.note}` : ""}</small>`
                    }</td></tr>`,
                )
              : html`<tr><td colspan="9">No ${findingStatus ? `${findingStatus} ` : ""}findings${repository ? ` in ${repository}` : ""}.</td></tr>`
          }</tbody>
        </table>
        ${pager({ base: BASE, param: "after", current: ctx.query.after, next: findings.next, keep: { repository, status: findingStatus }, label: "findings" })}
      </section>
      <section aria-labelledby="refusals-heading">
        <h2 id="refusals-heading">Refusal log</h2>
        <p>Versions the gate refused to store (BLOCK), and requests for young versions' files the cooldown refused (once an hour per file and client): never stored, so no finding of a file.</p>
        <table class="list" id="refusals">
          <thead><tr><th scope="col">Refused</th><th scope="col">Repository</th><th scope="col">Package</th><th scope="col">Why</th><th scope="col">Who tried</th></tr></thead>
          <tbody>${
            refusals.items.length
              ? refusals.items.map(
                  (r) => html`<tr><td>${when(r.refused)}</td><td>${r.repository}</td><td><code>${r.name}@${r.version}</code><br><small>${r.path}</small></td><td>${r.reason}</td><td><code>${r.principal}</code></td></tr>`,
                )
              : html`<tr><td colspan="5">Nothing was refused${repository ? ` in ${repository}` : ""}.</td></tr>`
          }</tbody>
        </table>
        ${pager({ base: BASE, param: "refused", current: ctx.query.refused, next: refusals.next, keep: { repository }, label: "refusals" })}
      </section>
      <section aria-labelledby="deny-heading">
        <h2 id="deny-heading">Deny list</h2>
        <table class="list" id="deny-list">
          <thead><tr><th scope="col">Ecosystem</th><th scope="col">Package</th><th scope="col">Versions</th><th scope="col">Why</th><th scope="col">Added</th><th scope="col">Remove</th></tr></thead>
          <tbody>${
            deny.items.length
              ? deny.items.map(
                  (d) => html`<tr><td>${d.ecosystem}</td><td><code>${d.name}</code></td><td><code>${d.versions || "*"}</code></td><td>${d.reason}</td><td>${when(d.created)} <small>${d.createdBy}</small></td>
                    <td>${actionForm(ctx, { to: here, action: "unlist", button: "Remove", fields: { id: d.id } })}</td></tr>`,
                )
              : html`<tr><td colspan="6">The deny list is empty.</td></tr>`
          }</tbody>
        </table>
        ${actionForm(ctx, {
          to: here,
          action: "deny",
          button: "Add to the deny list",
          controls: html`<p class="field"><label for="deny-ecosystem">Ecosystem</label> <select id="deny-ecosystem" name="ecosystem"><option>npm</option><option>PyPI</option><option>Maven</option></select></p>
            ${field({ id: "deny-name", name: "name", label: "Package", required: true, hint: "Maven: groupId:artifactId" })}
            ${field({ id: "deny-versions", name: "versions", label: "Versions", placeholder: "*", hint: "npm: ^1.2.0; PyPI: >=1.0,<1.4; Maven: [1.0,2.0)" })}
            ${field({ id: "deny-reason", name: "reason", label: "Why", required: true })}`,
        })}
      </section>
      <section aria-labelledby="cooldown-heading">
        <h2 id="cooldown-heading">Cooldown</h2>
        <p>Proxied versions younger than the minimum age are neither listed nor fetched; a version with no publish time known counts as too young.
          Minimum age (<code>${MIN_AGE}</code>): ${minAge?.value ? html`<code>${minAge.value}</code>` : html`<em>off</em>`}${(minAge?.tenants ?? []).map((t) => html`; for tenant <code>${t.tenant}</code>: <code>${t.value || "off"}</code>`)}.
          A repository may have its own (<code>PUT /api/repositories/&lt;name&gt;/gate</code>).</p>
        ${
          minAge?.fixed
            ? html`<p>Fixed at start by ${minAge.fixedAt ?? "the operator"}.</p>`
            : actionForm(ctx, {
                to: here,
                action: "minage",
                button: "Set the minimum age",
                controls: field({ id: "cooldown-min-age", name: "value", label: "Minimum age", value: minAge?.value ?? "", placeholder: "off", hint: "72h, 3d, 30m; blank: off" }),
              })
        }
        <table class="list" id="cooldown-allows">
          <thead><tr><th scope="col">Repository</th><th scope="col">Ecosystem</th><th scope="col">Package</th><th scope="col">Version</th><th scope="col">Why</th><th scope="col">Added</th><th scope="col">Remove</th></tr></thead>
          <tbody>${
            allows.items.length
              ? allows.items.map(
                  (a) => html`<tr><td>${a.repository ?? html`<em>every</em>`}</td><td>${a.ecosystem}</td><td><code>${a.name}</code></td><td>${a.version ? html`<code>${a.version}</code>` : html`<em>every</em>`}</td><td>${a.reason}</td><td>${when(a.created)} <small>${a.createdBy}</small></td>
                    <td>${actionForm(ctx, { to: here, action: "disallow", button: "Remove", fields: { id: a.id } })}</td></tr>`,
                )
              : html`<tr><td colspan="7">No allows: every young version waits out the minimum age.</td></tr>`
          }</tbody>
        </table>
        ${actionForm(ctx, {
          to: here,
          action: "allow",
          button: "Let through the cooldown",
          controls: html`<p class="field"><label for="allow-ecosystem">Ecosystem</label> <select id="allow-ecosystem" name="ecosystem"><option>npm</option><option>PyPI</option><option>Maven</option></select></p>
            ${field({ id: "allow-name", name: "name", label: "Package", required: true, hint: "Maven: groupId:artifactId" })}
            ${field({ id: "allow-version", name: "version", label: "Version", placeholder: "every", hint: "blank: every young version" })}
            ${field({ id: "allow-repository", name: "repository", label: "Repository", placeholder: "every", hint: "blank: every repository" })}
            ${field({ id: "allow-reason", name: "reason", label: "Why", required: true })}`,
        })}
      </section>`;
    return { kind: "html", title: "Screening", main };
  },

  actions: {
    async confirm(ctx) {
      return afterChange(await ctx.api("POST", `/api/findings/${encodeURIComponent(ctx.form.id ?? "")}/confirm`, {}), backOf(ctx.query.repository, ctx.query.status), "Confirmed: the file is held");
    },
    async dismiss(ctx) {
      return afterChange(await ctx.api("POST", `/api/findings/${encodeURIComponent(ctx.form.id ?? "")}/dismiss`, {}), backOf(ctx.query.repository, ctx.query.status), "Dismissed");
    },
    async release(ctx) {
      const back = backOf(ctx.query.repository);
      return afterChange(await ctx.api("POST", `/api/held/${encodeURIComponent(ctx.form.id ?? "")}/release`, {}), back, "Released: it is served again");
    },
    async discard(ctx) {
      const back = backOf(ctx.query.repository);
      return afterChange(await ctx.api("DELETE", `/api/held/${encodeURIComponent(ctx.form.id ?? "")}`), back, "Discarded: the file is removed");
    },
    async deny(ctx) {
      const f = ctx.form;
      const body = { ecosystem: f.ecosystem ?? "", name: f.name ?? "", versions: f.versions ?? "", reason: f.reason ?? "" };
      return afterChange(await ctx.api("POST", "/api/deny-list", body), backOf(ctx.query.repository), `Added ${body.name} ${body.versions || "*"} to the deny list`);
    },
    async minage(ctx) {
      return afterChange(await ctx.api("PUT", "/api/settings/gate.min-age", { value: ctx.form.value ?? "" }), backOf(ctx.query.repository), "Minimum age set");
    },
    async allow(ctx) {
      const f = ctx.form;
      const body = { ecosystem: f.ecosystem ?? "", name: f.name ?? "", reason: f.reason ?? "", ...(f.version ? { version: f.version } : {}), ...(f.repository ? { repository: f.repository } : {}) };
      return afterChange(await ctx.api("POST", "/api/gate/allows", body), backOf(ctx.query.repository), `${body.name} ${body.version ?? "(every version)"} is let through the cooldown`);
    },
    async disallow(ctx) {
      return afterChange(await ctx.api("DELETE", `/api/gate/allows/${encodeURIComponent(ctx.form.id ?? "")}`), backOf(ctx.query.repository), "Allow removed");
    },
    async unlist(ctx) {
      return afterChange(await ctx.api("DELETE", `/api/deny-list/${encodeURIComponent(ctx.form.id ?? "")}`), backOf(ctx.query.repository), "Removed from the deny list");
    },
  },
};

const STATUSES = ["open", "confirmed", "dismissed"];
const MIN_AGE = "svc.gate.min-age";

/** The page again, with its repository and findings' status filters. */
const backOf = (repository: string | undefined, status?: string) => {
  const q = new URLSearchParams();
  if (repository && REPOSITORY.test(repository)) q.set("repository", repository);
  if (status && STATUSES.includes(status)) q.set("status", status);
  const query = q.toString();
  return query ? `${BASE}?${query}` : BASE;
};

/** Who downloaded a finding's file: the latest principals, and how many more. */
const downloadedBy = (f: FindingView) =>
  f.downloaders === 0
    ? html`nobody`
    : html`${f.downloadedBy.map((d) => html`<code>${d.principal}</code> <small>${d.downloads}×, last ${when(d.last)}</small><br>`)}${f.downloaders > f.downloadedBy.length ? html`<small>and ${f.downloaders - f.downloadedBy.length} more</small>` : ""}`;
