import type { ExportView } from "@svc/contracts";
import { html, type Html } from "./html.js";
import { expectOk, type PageContext, type PageOutcome } from "./page-contract.js";
import { actionForm, afterChange, seg, when } from "./page-widgets.js";
import { REPOSITORIES, repositoryPath } from "./repository-view.js";
import type { Repository } from "./repository-forms.js";

/**
 * Export on the Repositories page (admin role: manage:write on `*`): a form posting the target
 * with `_csrf`, then the export's own view, which shows its progress and, once it ended, the
 * result (copied, skipped, refused with reasons); it reloads itself while the export runs.
 */

export const exportPath = (source: string, id: string) => `${repositoryPath(source)}/exports/${seg(id)}`;

/** The Export section of a repository's view: a target among the other repositories of its format (a group holds no files: none). */
export function exportSection(ctx: PageContext, detail: Repository, all: readonly Repository[]): Html | "" {
  const name = detail.name;
  if (detail.type === "group") return "";
  const targets = all.filter((r) => r.format === detail.format && r.name !== name && r.type !== "group");
  const controls = html`<p class="field"><label for="export-target">Target repository</label> <select id="export-target" name="target" required>${targets.map(
    (r) => html`<option value="${r.name}">${r.name}</option>`,
  )}</select></p>`;
  return html`<section aria-labelledby="export-heading" id="export">
    <h2 id="export-heading">Export</h2>
    <p>Copies everything ${name} holds into another ${detail.format} repository, through the same checks as a client's upload. What the target holds already is skipped; a path where it holds other content is refused and listed, never overwritten. Needs <code>manage:write</code> on <code>*</code> (the admin role).</p>
    ${
      targets.length
        ? actionForm(ctx, { to: repositoryPath(name), action: "export", button: "Export", controls })
        : html`<p id="export-none">No other ${detail.format} repository to export into: <a href="${`${REPOSITORIES}#create`}">create one</a> first.</p>`
    }
  </section>`;
}

/** The `export` form post: starts the export, then shows its progress. */
export async function startExport(ctx: PageContext, name: string): Promise<PageOutcome> {
  const target = (ctx.form.target ?? "").trim();
  const res = await ctx.api<ExportView>("POST", `/api/repositories/${seg(name)}/export`, { target });
  if (res.status !== 202) return afterChange(res, repositoryPath(name), "");
  return { kind: "redirect", location: exportPath(name, res.body.id), notice: `Export of ${name} into ${target} started` };
}

const STATE_TEXT: Record<ExportView["state"], string> = {
  running: "Running",
  done: "Done",
  failed: "Failed",
  interrupted: "Interrupted",
};

/** `/ui/repositories/<source>/exports/<id>`: progress, then the result. */
export async function exportView(ctx: PageContext, source: string, id: string): Promise<PageOutcome> {
  const e = expectOk(await ctx.api<ExportView>("GET", `/api/repositories/${seg(source)}/exports/${seg(id)}`));
  const done = e.copied + e.skipped + e.refused;
  const main = html`
    <p><a href="${repositoryPath(source)}">Repository ${source}</a> · <a href="${REPOSITORIES}">All repositories</a></p>
    <section aria-labelledby="export-result-heading">
      <h2 id="export-result-heading">Export of ${e.source} into ${e.target}</h2>
      <p id="export-state" data-state="${e.state}" role="status" aria-live="polite"><strong>${STATE_TEXT[e.state]}</strong>${e.detail ? html`: ${e.detail}` : ""}</p>
      <p><progress id="export-progress" max="${String(Math.max(e.total, done, 1))}" value="${String(done)}" aria-label="Items handled">${done} of ${e.total}</progress> ${done} of ${e.total} handled</p>
      <table class="list" id="export-counts">
        <thead><tr><th scope="col">Copied</th><th scope="col">Skipped (already there)</th><th scope="col">Refused</th><th scope="col">Started</th><th scope="col">Ended</th></tr></thead>
        <tbody><tr><td>${e.copied}</td><td>${e.skipped}</td><td>${e.refused}</td><td>${when(e.started)}</td><td>${e.ended ? when(e.ended) : "-"}</td></tr></tbody>
      </table>
      ${
        e.refusals.length
          ? html`<h3>Refused</h3><table class="list" id="export-refusals"><thead><tr><th scope="col">Path</th><th scope="col">Why</th></tr></thead><tbody>${e.refusals.map(
              (r) => html`<tr><td><code>${r.path}</code></td><td>${r.reason}</td></tr>`,
            )}</tbody></table>`
          : ""
      }
      ${e.state === "running" ? "" : actionForm(ctx, { to: repositoryPath(source), action: "export", button: "Export again", fields: { target: e.target } })}
    </section>`;
  return { kind: "html", title: `Export of ${source}`, main, scripts: e.state === "running" ? ["export-progress.js"] : [] };
}
