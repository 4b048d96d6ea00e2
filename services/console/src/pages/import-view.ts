import type { ImportView } from "@svc/contracts";
import { html, type Html } from "./html.js";
import { expectOk, type PageContext, type PageOutcome } from "./page-contract.js";
import { actionForm, afterChange, seg, when } from "./page-widgets.js";
import { REPOSITORIES, repositoryPath } from "./repository-view.js";
import type { Repository } from "./repository-forms.js";

/**
 * Imports on the Repositories page (admin role: manage:write on `*`), on a proxy repository's
 * view: a form listing packages (one per line) and an optional hosted target, the recent
 * imports, and each import's own view with its progress and counts (imported, skipped, held,
 * refused with reasons), which reloads itself while the import runs.
 */

export const importPath = (repository: string, id: string) => `${repositoryPath(repository)}/imports/${seg(id)}`;

const EXAMPLES: Record<string, string> = { npm: "lodash\nleft-pad@1.3.0", pypi: "requests\nurllib3==2.2.1", maven: "org.apache.commons:commons-lang3\njunit:junit:4.13.2", raw: "tools/installer-1.2.3.tar.gz" };

/** The Import section of a proxy repository's view (nothing for a hosted one). */
export async function importSection(ctx: PageContext, detail: Repository, all: readonly Repository[]): Promise<Html | string> {
  const name = detail.name;
  if (detail.type !== "proxy") return "";
  const recent = expectOk(await ctx.api<ImportView[]>("GET", `/api/repositories/${seg(name)}/imports?limit=10`));
  const targets = all.filter((r) => r.format === detail.format && r.name !== name && r.type !== "proxy" && r.type !== "group");
  const controls = html`<p class="field"><label for="import-packages">Packages, one per line</label><br><textarea id="import-packages" name="packages" rows="6" cols="50" required placeholder="${EXAMPLES[detail.format] ?? ""}"></textarea></p>
    <p class="field"><label for="import-target">Then copy into</label> <select id="import-target" name="target"><option value="">(nowhere: keep them in ${name})</option>${targets.map(
      (r) => html`<option value="${r.name}">${r.name}</option>`,
    )}</select></p>`;
  return html`<section aria-labelledby="import-heading" id="import">
    <h2 id="import-heading">Import</h2>
    <p>Fetches the listed packages (every version, or the one named) from ${name}'s upstream now, each through the screening gate, and then, if you name one, copies them into a hosted repository. Needs <code>manage:write</code> on <code>*</code> (the admin role).</p>
    ${actionForm(ctx, { to: repositoryPath(name), action: "import", button: "Import", controls })}
    ${
      recent.length
        ? html`<table class="list" id="imports"><thead><tr><th scope="col">Started</th><th scope="col">State</th><th scope="col">Packages</th><th scope="col">Imported</th><th scope="col">Refused</th></tr></thead><tbody>${recent.map(
            (i) => html`<tr><td><a href="${importPath(name, i.id)}">${when(i.started)}</a></td><td>${STATE_TEXT[i.state]}</td><td>${i.done} of ${i.packages}</td><td>${i.imported}</td><td>${i.refused}</td></tr>`,
          )}</tbody></table>`
        : ""
    }
  </section>`;
}

/** The `import` form post: starts the import, then shows its progress. */
export async function startImport(ctx: PageContext, name: string): Promise<PageOutcome> {
  const packages = (ctx.form.packages ?? "").split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "");
  const target = (ctx.form.target ?? "").trim();
  const res = await ctx.api<ImportView>("POST", `/api/repositories/${seg(name)}/imports`, { packages, ...(target ? { target } : {}) });
  if (res.status !== 202) return afterChange(res, repositoryPath(name), "");
  return { kind: "redirect", location: importPath(name, res.body.id), notice: `Import of ${packages.length} package${packages.length === 1 ? "" : "s"} into ${name} started` };
}

const STATE_TEXT: Record<ImportView["state"], string> = { running: "Running", done: "Done", failed: "Failed" };

/** `/ui/repositories/<repository>/imports/<id>`: progress, then the result. */
export async function importView(ctx: PageContext, repository: string, id: string): Promise<PageOutcome> {
  const i = expectOk(await ctx.api<ImportView>("GET", `/api/repositories/${seg(repository)}/imports/${seg(id)}`));
  const main = html`
    <p><a href="${repositoryPath(repository)}">Repository ${repository}</a> · <a href="${REPOSITORIES}">All repositories</a></p>
    <section aria-labelledby="import-result-heading">
      <h2 id="import-result-heading">Import into ${i.repository}${i.target ? html`, then ${i.target}` : ""}</h2>
      <p id="import-state" data-state="${i.state}" role="status" aria-live="polite"><strong>${STATE_TEXT[i.state]}</strong>${i.detail ? html`: ${i.detail}` : ""}</p>
      <p><progress id="import-progress" max="${String(Math.max(i.packages, 1))}" value="${String(i.done)}" aria-label="Packages done">${i.done} of ${i.packages}</progress> ${i.done} of ${i.packages} packages done</p>
      <table class="list" id="import-counts">
        <thead><tr><th scope="col">Imported</th><th scope="col">Skipped (already there)</th><th scope="col">Held</th><th scope="col">Refused</th><th scope="col">Started</th><th scope="col">Ended</th></tr></thead>
        <tbody><tr><td>${i.imported}</td><td>${i.skipped}</td><td>${i.held}</td><td>${i.refused}</td><td>${when(i.started)}</td><td>${i.ended ? when(i.ended) : "-"}</td></tr></tbody>
      </table>
      ${i.export ? html`<p><a id="import-export" href="${`${repositoryPath(repository)}/exports/${seg(i.export)}`}">The copy into ${i.target ?? ""}</a></p>` : ""}
      ${
        i.refusals.length
          ? html`<h3>Refused</h3><table class="list" id="import-refusals"><thead><tr><th scope="col">Path</th><th scope="col">Why</th></tr></thead><tbody>${i.refusals.map(
              (r) => html`<tr><td><code>${r.path}</code></td><td>${r.reason}</td></tr>`,
            )}</tbody></table>`
          : ""
      }
    </section>`;
  return { kind: "html", title: `Import into ${repository}`, main, scripts: i.state === "running" ? ["export-progress.js"] : [] };
}
