import { html, type Html } from "./html.js";
import { expectOk, type PageContext, type PageOutcome } from "./page-contract.js";
import { PAGE_SIZE, actionForm, field, listPage, pager, seg, when } from "./page-widgets.js";
import type { Repository, RepositoryDetail } from "./repository-forms.js";

/** One repository on the Repositories page: its files (paged, by path prefix), its retention policy, Deploy. */

/** A file as the repository's listing answers it. */
export interface RepoFile {
  path: string;
  size: number;
  sha256: string;
  updated: string;
  downloads: number;
  held: string | null;
}
export interface RetentionPolicy {
  path?: string;
  keepVersions?: number;
  maxAge?: string;
  unusedFor?: string;
}

export const REPOSITORIES = "/ui/repositories";
export const repositoryPath = (name: string) => `${REPOSITORIES}/${seg(name)}`;
/** The artifact route a client downloads from (and Deploy uploads to), each segment encoded. */
const artifactUrl = (repo: string, path: string) => `/repository/${seg(repo)}/${path.split("/").map(seg).join("/")}`;

export function retentionText(p: RetentionPolicy | null | undefined): string {
  if (!p) return "keep everything";
  const rules = [
    p.keepVersions !== undefined ? `keep the ${p.keepVersions} newest versions` : "",
    p.maxAge ? `remove when older than ${p.maxAge}` : "",
    p.unusedFor ? `remove when unused for ${p.unusedFor}` : "",
  ].filter(Boolean);
  return `${rules.join("; ")}${p.path ? ` (under ${p.path}/)` : ""}`;
}

/** A size in bytes as people read it (`46 B`, `1.2 MiB`). */
export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = bytes / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

function retentionSection(ctx: PageContext, name: string, policy: RetentionPolicy | null): Html {
  const here = repositoryPath(name);
  const p = policy ?? {};
  return html`<section aria-labelledby="retention-heading">
    <h2 id="retention-heading">Retention policy</h2>
    <p id="retention-current">${retentionText(policy)}</p>
    <p>Applied by the <code>retention</code> walk (see Walks). A file goes when it meets every age rule set and is not one of the newest versions of its folder; held files never go.</p>
    ${actionForm(ctx, {
      to: here,
      action: "set-retention",
      button: "Save policy",
      controls: html`${field({ id: "retention-path", name: "path", label: "Folder", value: p.path, placeholder: "blank: the whole repository" })}${field({
        id: "retention-keep",
        name: "keepVersions",
        label: "Keep newest versions",
        type: "number",
        value: p.keepVersions === undefined ? "" : String(p.keepVersions),
      })}${field({ id: "retention-max-age", name: "maxAge", label: "Older than", value: p.maxAge, placeholder: "P90D" })}${field({
        id: "retention-unused",
        name: "unusedFor",
        label: "Unused for",
        value: p.unusedFor,
        placeholder: "P30D",
      })}`,
    })}
    ${policy ? actionForm(ctx, { to: here, action: "remove-retention", button: "Remove policy" }) : ""}
  </section>`;
}

function deploySection(name: string): Html {
  return html`<section aria-labelledby="deploy-heading">
    <h2 id="deploy-heading">Deploy</h2>
    <p>Publishes one file under the path you choose, through the same route and checks as a client's upload (it needs <code>repository:write</code>).</p>
    <form id="deploy-form" data-repository="${name}">
      <p class="field"><label for="deploy-file">File</label> <input id="deploy-file" type="file" required></p>
      <p class="field"><label for="deploy-path">Path in the repository</label> <input id="deploy-path" type="text" placeholder="com/acme/app/1.0/app.jar"> <small>blank: the file's name</small></p>
      <button type="submit">Deploy</button>
    </form>
    <p id="deploy-result" role="status" aria-live="polite"></p>
  </section>`;
}

/** Sections other files of the page add above the files (what the repository is) and below them (Import, Export, Remove). */
export type MoreSections = (detail: RepositoryDetail, all: Repository[]) => Promise<{ above: Html | string; below: Html | string }>;

/** `more`: the sections other files add, given the repository and every repository (read once here). */
export async function repositoryView(ctx: PageContext, name: string, more: MoreSections = async () => ({ above: "", below: "" })): Promise<PageOutcome> {
  const here = repositoryPath(name);
  const prefix = ctx.query.prefix ?? "";
  const [files, retention, detail, all] = await Promise.all([
    listPage<RepoFile>(ctx, `/api/repositories/${seg(name)}/files`, { limit: String(PAGE_SIZE), after: ctx.query.after, prefix }),
    ctx.api<RetentionPolicy>("GET", `/api/repositories/${seg(name)}/retention`),
    ctx.api<RepositoryDetail>("GET", `/api/repositories/${seg(name)}`).then(expectOk),
    ctx.api<Repository[]>("GET", "/api/repositories?limit=500").then(expectOk),
  ]);
  // 404 here is "no policy" (the repository exists: its files answered).
  const policy = retention.status === 404 ? null : expectOk(retention);
  const extra = await more(detail, all);
  const main = html`
    <p><a href="${REPOSITORIES}">All repositories</a></p>
    ${extra.above}
    <section aria-labelledby="files-heading">
      <h2 id="files-heading">Files in ${name}</h2>
      <form method="get" action="${here}" class="filter">
        <p class="field"><label for="files-prefix">Path starts with</label> <input id="files-prefix" name="prefix" type="text" value="${prefix}"> <button type="submit">Show</button></p>
      </form>
      <table class="list" id="files">
        <thead><tr><th scope="col">Path</th><th scope="col">Size</th><th scope="col">SHA-256</th><th scope="col">Last modified</th><th scope="col">Downloads</th><th scope="col">Held</th></tr></thead>
        <tbody>${
          files.items.length
            ? files.items.map(
                (f) => html`<tr>
                  <td><a href="${artifactUrl(name, f.path)}" download>${f.path}</a></td><td title="${`${f.size} bytes`}">${size(f.size)}</td>
                  <td><code title="${f.sha256}">${f.sha256.slice(0, 16)}</code></td><td>${when(f.updated)}</td><td>${f.downloads}</td><td>${f.held ?? ""}</td>
                </tr>`,
              )
            : html`<tr><td colspan="6">No files${prefix ? html` under <code>${prefix}</code>` : ""}.</td></tr>`
        }</tbody>
      </table>
      ${pager({ base: here, param: "after", current: ctx.query.after, next: files.next, keep: { prefix }, label: "files" })}
    </section>
    ${retentionSection(ctx, name, policy)}
    ${ctx.options.deployEnabled && detail.type !== "proxy" && ctx.may("repository:write", name) ? deploySection(name) : ""}
    ${extra.below}`;
  return { kind: "html", title: `Repository ${name}`, main, scripts: ctx.options.deployEnabled ? ["deploy.js"] : [] };
}

/** The policy a retention form describes (blank fields left out, so the API names what is missing). */
export function policyFromForm(form: Record<string, string>): RetentionPolicy {
  const p: RetentionPolicy = {};
  if (form.path?.trim()) p.path = form.path.trim();
  if (form.keepVersions?.trim()) p.keepVersions = Number(form.keepVersions.trim());
  if (form.maxAge?.trim()) p.maxAge = form.maxAge.trim();
  if (form.unusedFor?.trim()) p.unusedFor = form.unusedFor.trim();
  return p;
}
