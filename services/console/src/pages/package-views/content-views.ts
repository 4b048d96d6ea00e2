import { html, type Html } from "../html.js";
import { expectOk, type PageContext, type PageOutcome } from "../page-contract.js";
import { PAGE_SIZE, listPage, pager, seg, when } from "../page-widgets.js";
import type { RepositoryDetail } from "../repository-forms.js";
import { size, type RepoFile } from "../repository-view.js";
import { renderReadme } from "./readme.js";
import { setMeUpSection } from "./set-me-up.js";

/**
 * What a repository holds, as its format's clients name it (docs/administration/console.md,
 * "Repository views"): npm packages with versions, dist-tags, publish times and readme; Maven by
 * group, artifact and version; PyPI projects by version with their files; images with their tags;
 * and any repository as a folder tree. Read through the artifacts service's read-only routes
 * (`/api/repositories/<name>/packages`, `…/package`, `…/folders`, `/api/search`).
 */

const REPOSITORIES = "/ui/repositories";
const here = (repo: string) => `${REPOSITORIES}/${seg(repo)}`;
export const packagePath = (repo: string, name: string) => `${here(repo)}/package?name=${encodeURIComponent(name)}`;
export const folderPath = (repo: string, path: string) => (path ? `${here(repo)}/browse?path=${encodeURIComponent(path)}` : `${here(repo)}/browse`);
const fileUrl = (repo: string, path: string) => `/repository/${seg(repo)}/${path.split("/").map(seg).join("/")}`;

interface PackageSummary {
  name: string;
  versions: number;
  latest: string;
  updated: string;
}
type PackageFile = RepoFile;
interface PackageDetail {
  name: string;
  format: string;
  description: string | null;
  readme: string | null;
  tags: Record<string, string> | null;
  versions: { version: string; published: string; files: PackageFile[] }[];
}
interface Folder {
  path: string;
  entries: { name: string; folder: boolean; files: number; bytes: number; updated: string }[];
}
export interface SearchHit {
  repository: string;
  format: string;
  path: string;
  size: number;
  updated: string;
  package: { name: string; version: string } | null;
}

/** What the format calls its packages, in the list's heading and columns. */
const NOUNS: Record<string, { many: string; one: string; version: string }> = {
  npm: { many: "Packages", one: "Package", version: "Version" },
  maven: { many: "Artifacts (group:artifact)", one: "Artifact", version: "Version" },
  pypi: { many: "Projects", one: "Project", version: "Version" },
  oci: { many: "Images", one: "Image", version: "Manifest" },
  cargo: { many: "Crates", one: "Crate", version: "Version" },
  go: { many: "Modules", one: "Module", version: "Version" },
};

/** The install line a reader copies for one package of `format` (npm: `npm install <name>@<version> --registry …`). */
export function installCommand(format: string, base: string, repo: string, name: string, version?: string): string | undefined {
  const url = `${base}/repository/${repo}`;
  switch (format) {
    case "npm":
      return `npm install ${name}${version ? `@${version}` : ""} --registry ${url}/`;
    case "pypi":
      return `pip install --index-url ${url}/simple/ ${name}${version ? `==${version}` : ""}`;
    case "maven": {
      const [g, a] = name.split(":");
      return `mvn dependency:get -DremoteRepositories=${repo}::default::${url} -Dartifact=${g}:${a}${version ? `:${version}` : ""}`;
    }
    case "oci":
      return `docker pull ${base.replace(/^[a-z]+:\/\//i, "")}/${repo}/${name}${version ? `@${version}` : ""}`;
    case "cargo":
      return `cargo add ${name}${version ? `@${version}` : ""} --registry ${repo}`;
    case "go":
      return `GOPROXY=${url} go get ${name}${version ? `@${version}` : ""}`;
    default:
      return undefined;
  }
}

/** The sections the repository's page shows above its flat file list: its packages (or the way to its folders), then Set me up. */
export async function contentSections(ctx: PageContext, detail: RepositoryDetail): Promise<Html> {
  const setup = setMeUpSection({ base: ctx.options.publicBaseUrl.replace(/\/+$/, ""), repository: detail.name, format: detail.format, scopeFromPath: detail.scopeFromPath === true });
  if ((detail.type ?? "hosted") === "group") {
    return html`<section aria-labelledby="content-heading"><h2 id="content-heading">Content</h2><p>A group serves its members' content: open a member above to browse it.</p></section>${setup}`;
  }
  const nouns = NOUNS[detail.format];
  const browseLink = html`<p><a href="${folderPath(detail.name, "")}" id="browse-link">Browse ${detail.name} as folders</a></p>`;
  if (!nouns) return html`<section aria-labelledby="content-heading"><h2 id="content-heading">Content</h2>${browseLink}</section>${setup}`;
  const q = ctx.query.q ?? "";
  const list = await listPage<PackageSummary>(ctx, `/api/repositories/${seg(detail.name)}/packages`, { limit: String(PAGE_SIZE), after: ctx.query.pkgafter, q });
  return html`<section aria-labelledby="content-heading">
      <h2 id="content-heading">${nouns.many} in ${detail.name}</h2>
      <form method="get" action="${here(detail.name)}" class="filter"><p class="field"><label for="packages-q">Name holds</label> <input id="packages-q" name="q" type="text" value="${q}"> <button type="submit">Filter</button></p></form>
      <table class="list" id="packages">
        <thead><tr><th scope="col">${nouns.one}</th><th scope="col">Latest</th><th scope="col">Versions</th><th scope="col">Updated</th></tr></thead>
        <tbody>${
          list.items.length
            ? list.items.map((p) => html`<tr><td><a href="${packagePath(detail.name, p.name)}">${p.name}</a></td><td>${p.latest}</td><td>${p.versions}</td><td>${when(p.updated)}</td></tr>`)
            : html`<tr><td colspan="4">Nothing published${q ? html` with <code>${q}</code> in its name` : ""} yet.</td></tr>`
        }</tbody>
      </table>
      ${pager({ base: here(detail.name), param: "pkgafter", current: ctx.query.pkgafter, next: list.next, keep: { q }, label: nouns.many.toLowerCase() })}
      ${browseLink}
    </section>
    ${setup}`;
}

/** `/ui/repositories/<repo>/package?name=<name>`: one package's versions, tags, readme and files. */
export async function packageView(ctx: PageContext, repo: string, name: string): Promise<PageOutcome> {
  const p = expectOk(await ctx.api<PackageDetail>("GET", `/api/repositories/${seg(repo)}/package?name=${encodeURIComponent(name)}`));
  const nouns = NOUNS[p.format] ?? { one: "Package", version: "Version", many: "Packages" };
  const base = ctx.options.publicBaseUrl.replace(/\/+$/, "");
  const install = installCommand(p.format, base, repo, p.name);
  // `latest` first, as npm shows them, then by name.
  const tags = Object.entries(p.tags ?? {}).sort(([a], [b]) => (a === "latest" ? -1 : b === "latest" ? 1 : a < b ? -1 : a > b ? 1 : 0));
  const main = html`
    <p><a href="${here(repo)}">Repository ${repo}</a></p>
    ${p.description ? html`<p id="package-description">${p.description}</p>` : ""}
    ${install ? html`<section aria-labelledby="install-heading"><h2 id="install-heading">Install</h2><pre class="setup"><code id="install-command">${install}</code></pre><p><small>Client configuration for this repository: <a href="${`${here(repo)}#set-me-up`}">Set me up</a>.</small></p></section>` : ""}
    ${
      p.tags
        ? html`<section aria-labelledby="tags-heading"><h2 id="tags-heading">${p.format === "npm" ? "Dist-tags" : "Tags"}</h2>
          <table class="list" id="tags"><thead><tr><th scope="col">Tag</th><th scope="col">${nouns.version}</th></tr></thead><tbody>${
            tags.length ? tags.map(([t, v]) => html`<tr><td>${t}</td><td><code>${v}</code></td></tr>`) : html`<tr><td colspan="2">No tags.</td></tr>`
          }</tbody></table></section>`
        : ""
    }
    <section aria-labelledby="versions-heading">
      <h2 id="versions-heading">Versions</h2>
      <table class="list" id="versions">
        <thead><tr><th scope="col">${nouns.version}</th><th scope="col">Published</th><th scope="col">Files</th></tr></thead>
        <tbody>${
          p.versions.length
            ? p.versions.map(
                (v) => html`<tr><td><code>${v.version}</code>${tags.filter(([, to]) => to === v.version).map(([t]) => html` <span class="tag">${t}</span>`)}</td><td>${when(v.published)}</td><td>${v.files.map(
                  (f) => html`<a href="${fileUrl(repo, f.path)}" download title="${`${f.size} bytes, sha256 ${f.sha256}`}">${f.path.slice(f.path.lastIndexOf("/") + 1)}</a> <small>${size(f.size)}${f.held ? `, held: ${f.held}` : ""}</small><br>`,
                )}</td></tr>`,
              )
            : html`<tr><td colspan="3">No versions stored.</td></tr>`
        }</tbody>
      </table>
    </section>
    ${p.readme ? html`<section aria-labelledby="readme-heading"><h2 id="readme-heading">Readme</h2><div class="readme" id="readme">${renderReadme(p.readme)}</div></section>` : ""}`;
  return { kind: "html", title: `${nouns.one} ${p.name}`, main };
}

/** `/ui/repositories/<repo>/browse?path=<folder>`: one folder's files and sub-folders, with the way up. */
export async function folderView(ctx: PageContext, repo: string, path: string): Promise<PageOutcome> {
  const result = await ctx.api<Folder>("GET", `/api/repositories/${seg(repo)}/folders?${new URLSearchParams({ path, limit: String(PAGE_SIZE), ...(ctx.query.after ? { after: ctx.query.after } : {}) })}`);
  const folder = expectOk(result);
  const next = Object.entries(result.headers ?? {}).find(([k]) => k.toLowerCase() === "x-next-cursor")?.[1];
  const parts = folder.path.split("/").filter(Boolean);
  const crumbs = parts.map((p, i) => html` / <a href="${folderPath(repo, `${parts.slice(0, i + 1).join("/")}/`)}">${p}</a>`);
  const main = html`
    <p><a href="${here(repo)}">Repository ${repo}</a></p>
    <nav aria-label="Folder" id="breadcrumbs"><a href="${folderPath(repo, "")}">${repo}</a>${crumbs}</nav>
    <section aria-labelledby="folder-heading">
      <h2 id="folder-heading">${folder.path ? `Folder ${folder.path}` : `Top of ${repo}`}</h2>
      <table class="list" id="folder">
        <thead><tr><th scope="col">Name</th><th scope="col">Files</th><th scope="col">Size</th><th scope="col">Last modified</th></tr></thead>
        <tbody>${
          folder.entries.length
            ? folder.entries.map(
                (e) => html`<tr><td>${
                  e.folder ? html`<a href="${folderPath(repo, `${folder.path}${e.name}/`)}">${e.name}/</a>` : html`<a href="${fileUrl(repo, `${folder.path}${e.name}`)}" download>${e.name}</a>`
                }</td><td>${e.folder ? e.files : ""}</td><td>${size(e.bytes)}</td><td>${when(e.updated)}</td></tr>`,
              )
            : html`<tr><td colspan="4">Nothing here.</td></tr>`
        }</tbody>
      </table>
      ${pager({ base: `${here(repo)}/browse`, param: "after", current: ctx.query.after, next, keep: { path }, label: "entries" })}
    </section>`;
  return { kind: "html", title: `Browse ${repo}`, main };
}

/** The search box of the Repositories page, and its results when `q` is given. */
export async function searchSection(ctx: PageContext, repositories: { name: string; format: string }[]): Promise<Html> {
  const q = (ctx.query.q ?? "").trim();
  const box = html`<form method="get" action="${REPOSITORIES}" class="filter" role="search"><p class="field"><label for="search-q">Package, artifact or file name</label> <input id="search-q" name="q" type="search" value="${q}" minlength="2"> <button type="submit">Search</button></p></form>`;
  if (!q) return html`<section aria-labelledby="search-heading"><h2 id="search-heading">Search</h2>${box}</section>`;
  if (q.length < 2) return html`<section aria-labelledby="search-heading"><h2 id="search-heading">Search</h2>${box}<p>Give two characters at least.</p></section>`;
  const hits = expectOk(await ctx.api<SearchHit[]>("GET", `/api/search?${new URLSearchParams({ q, limit: "200" })}`));
  const lower = q.toLowerCase();
  const repoHits = repositories.filter((r) => r.name.toLowerCase().includes(lower));
  // One row per package version (its files together), a file of no package on its own row.
  const rows = new Map<string, { hit: SearchHit; files: SearchHit[] }>();
  for (const h of hits) {
    const key = h.package ? `${h.repository}\u0000${h.package.name}\u0000${h.package.version}` : `${h.repository}\u0000\u0000${h.path}`;
    (rows.get(key) ?? rows.set(key, { hit: h, files: [] }).get(key)!).files.push(h);
  }
  return html`<section aria-labelledby="search-heading">
    <h2 id="search-heading">Search</h2>${box}
    ${repoHits.length ? html`<p id="search-repositories">Repositories: ${repoHits.map((r, i) => html`${i ? ", " : ""}<a href="${here(r.name)}">${r.name}</a>`)}</p>` : ""}
    <table class="list" id="search-results">
      <thead><tr><th scope="col">Repository</th><th scope="col">Package</th><th scope="col">Version</th><th scope="col">Files</th></tr></thead>
      <tbody>${
        rows.size
          ? [...rows.values()].map(
              ({ hit, files }) => html`<tr><td><a href="${here(hit.repository)}">${hit.repository}</a> <small>${hit.format}</small></td><td>${
                hit.package ? html`<a href="${packagePath(hit.repository, hit.package.name)}">${hit.package.name}</a>` : ""
              }</td><td>${hit.package?.version ?? ""}</td><td>${files.map((f) => html`<a href="${folderPath(hit.repository, f.path.includes("/") ? f.path.slice(0, f.path.lastIndexOf("/") + 1) : "")}">${f.path}</a><br>`)}</td></tr>`,
            )
          : html`<tr><td colspan="4">No file's name holds <code>${q}</code>.</td></tr>`
      }</tbody>
    </table>
    ${hits.length >= 200 ? html`<p>The first 200 files are shown: narrow the search.</p>` : ""}
  </section>`;
}
