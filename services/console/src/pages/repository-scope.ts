import { html, type Html } from "./html.js";
import { expectOk, type PageContext, type PageOutcome } from "./page-contract.js";
import { actionForm, inputRefusal, seg } from "./page-widgets.js";
import { repositoryPath } from "./repository-view.js";

/**
 * A repository's `scopeFromPath` on its page and on the Create form (docs/administration/
 * repositories.md, "Authorising by the path"): whether a request without Service-Repository-Name
 * is authorised against the repository its path names, so that a key granted on this repository
 * alone works with npm, pnpm, yarn, pip and twine. Set through `PATCH /api/repositories/<name>`.
 */

const WHAT =
  "A request without the Service-Repository-Name header (npm, pnpm, yarn, pip, twine and cargo cannot send it) is authorised against this repository, the one its path names, instead of against every repository (*): a key granted on this repository alone works with those clients, and reaches no other. A header sent anyway still wins.";

/** The Create form's checkbox (kept after a refusal). */
export function createScopeField(checked: boolean): Html {
  return html`<p class="field"><label><input type="checkbox" id="create-scope-from-path" name="scopeFromPath" value="true"${checked ? html` checked` : ""}> Authorise by the path</label> <small>${WHAT}</small></p>`;
}

/** The `scopeFromPath` a Create form asks for: only when ticked (off is the default). */
export const createScope = (form: Record<string, string>): { scopeFromPath?: true } => (form.scopeFromPath === "true" ? { scopeFromPath: true } : {});

/** "Keys granted on this repository" on a repository's page: the option as it is, and the form that switches it. */
export function scopeSection(ctx: PageContext, detail: { name: string; scopeFromPath?: boolean }): Html {
  const on = detail.scopeFromPath === true;
  return html`<section aria-labelledby="scope-heading" id="scope-from-path">
    <h2 id="scope-heading">Keys granted on this repository</h2>
    <p>Authorised by the path: <strong id="scope-from-path-current">${on ? "on" : "off"}</strong>. ${WHAT}</p>
    ${actionForm(ctx, {
      to: repositoryPath(detail.name),
      action: "set-scope-from-path",
      button: "Save",
      controls: html`<p class="field"><label><input type="checkbox" id="scope-from-path-on" name="scopeFromPath" value="true"${on ? html` checked` : ""}> Authorise by the path</label></p>`,
    })}
  </section>`;
}

/** The `set-scope-from-path` form post: an unticked box switches it off. */
export async function setScopeFromPath(ctx: PageContext, name: string): Promise<PageOutcome> {
  const on = ctx.form.scopeFromPath === "true";
  const res = await ctx.api<{ scopeFromPath: boolean }>("PATCH", `/api/repositories/${seg(name)}`, { scopeFromPath: on });
  const why = inputRefusal(res);
  if (why !== undefined) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: ${why}` };
  const r = expectOk(res);
  return { kind: "redirect", location: repositoryPath(name), notice: `${name} ${r.scopeFromPath ? "is authorised by its path: keys granted on it work without Service-Repository-Name" : "is authorised by the Service-Repository-Name header only"}` };
}
