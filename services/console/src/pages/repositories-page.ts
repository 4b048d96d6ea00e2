import { html, type Html } from "./html.js";
import { expectOk, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { PAGE_SIZE, actionForm, afterChange, field, listPage, pager, seg } from "./page-widgets.js";
import { exportSection, exportView, startExport } from "./export-view.js";
import { importSection, importView, startImport } from "./import-view.js";
import { REPOSITORIES, policyFromForm, repositoryPath, repositoryView, retentionText, type RetentionPolicy } from "./repository-view.js";
import {
  aboutSection,
  cooldownSection,
  createRepository,
  createSection,
  mavenOptionsSection,
  membersSection,
  removeRepository,
  removeSection,
  setCooldown,
  setMavenOptions,
  setMembers,
  typeOf,
  type CreateDraft,
  type FormatEntry,
  type Repository as Listed,
} from "./repository-forms.js";
import { quotaSection, setQuota, usageText } from "./repository-quota.js";
import { scopeSection, setScopeFromPath } from "./repository-scope.js";
import { contentSections, folderView, packageView, searchSection } from "./package-views/content-views.js";

interface Repository extends Listed {
  retention: RetentionPolicy | null;
}
interface RateLimits {
  default: number;
  tenants: { tenant: string; requestsPerMinute: number }[];
}

const perMinute = (n: number) => (n === 0 ? "no limit" : `${n} requests per minute`);

/** A proxy's upstream URL (never its credentials: the API does not show them), a group's members as links. */
function sourceCell(r: Listed): Html | string {
  if (r.upstream) return html`<code>${r.upstream.url}</code>`;
  if (r.members) return r.members.length ? html`${r.members.map((m, i) => html`${i ? ", " : ""}<a href="${repositoryPath(m)}">${m}</a>`)}` : "no members";
  return "";
}

/** The list, Create a repository (shown first, with the problem, when `draft` comes back refused) and Limits. */
async function overview(ctx: PageContext, draft?: CreateDraft): Promise<PageOutcome> {
  const [repos, all, formats, limits] = await Promise.all([
    listPage<Repository>(ctx, "/api/repositories", { limit: String(PAGE_SIZE), after: ctx.query.after }),
    ctx.api<Listed[]>("GET", "/api/repositories?limit=500").then(expectOk),
    ctx.api<FormatEntry[]>("GET", "/api/formats").then(expectOk),
    ctx.api<RateLimits>("GET", "/api/rate-limits").then(expectOk),
  ]);
  const create = createSection(ctx, formats, all, draft);
  const search = await searchSection(ctx, all);
  const main = html`
    ${draft ? create : ""}
    ${search}
    <section aria-labelledby="repositories-heading">
      <h2 id="repositories-heading">Repositories</h2>
      <table class="list" id="repositories">
        <thead><tr><th scope="col">Name</th><th scope="col">Format</th><th scope="col">Type</th><th scope="col">Upstream or members</th><th scope="col">Retention</th><th scope="col">Storage</th><th scope="col">Export</th></tr></thead>
        <tbody>${
          repos.items.length
            ? repos.items.map(
                (r) => html`<tr><td><a href="${repositoryPath(r.name)}">${r.name}</a></td><td>${r.format}</td><td>${typeOf(r)}</td><td>${sourceCell(r)}</td><td>${retentionText(r.retention)}</td><td>${typeOf(r) === "group" ? "" : usageText(r)}</td><td>${
                  typeOf(r) === "group" ? "" : html`<a href="${`${repositoryPath(r.name)}#export`}">Export ${r.name}…</a>`
                }</td></tr>`,
              )
            : html`<tr><td colspan="7">No repositories: create one below.</td></tr>`
        }</tbody>
      </table>
      ${pager({ base: REPOSITORIES, param: "after", current: ctx.query.after, next: repos.next, label: "repositories" })}
    </section>
    ${draft ? "" : create}
    <section aria-labelledby="limits-heading">
      <h2 id="limits-heading">Limits</h2>
      <p>A tenant's requests share one rate ceiling across every gateway: <strong>${perMinute(limits.default)}</strong> by default (setting <code>svc.rate-limit</code>).
        An override for a tenant replaces it; every gateway applies it at once.</p>
      <table class="list" id="rate-limits">
        <thead><tr><th scope="col">Tenant</th><th scope="col">Ceiling</th><th scope="col">Remove</th></tr></thead>
        <tbody>${
          limits.tenants.length
            ? limits.tenants.map(
                (t) => html`<tr><td>${t.tenant}</td><td>${perMinute(t.requestsPerMinute)}</td><td>${actionForm(ctx, {
                  to: REPOSITORIES,
                  action: "remove-limit",
                  button: "Remove override",
                  fields: { tenant: t.tenant },
                })}</td></tr>`,
              )
            : html`<tr><td colspan="3">No overrides: the default applies.</td></tr>`
        }</tbody>
      </table>
      ${actionForm(ctx, {
        to: REPOSITORIES,
        action: "set-limit",
        button: "Set override",
        controls: html`${field({ id: "limit-tenant", name: "tenant", label: "Tenant", value: ctx.person.tenant, required: true })}${field({
          id: "limit-rpm",
          name: "requestsPerMinute",
          label: "Requests per minute",
          type: "number",
          required: true,
          hint: "0: no limit",
        })}`,
      })}
    </section>`;
  return { kind: "html", title: "Repositories", main };
}

/** `/ui/repositories/<name>`: the repository's name, or undefined for the list. */
const repositoryOf = (ctx: PageContext): string | undefined => {
  const m = /^\/([^/]+)$/.exec(ctx.subpath);
  return m ? decodeURIComponent(m[1]!) : undefined;
};
/** `/ui/repositories/<name>/exports/<id>`: an export's progress and result. */
const exportOf = (ctx: PageContext): { source: string; id: string } | undefined => {
  const m = /^\/([^/]+)\/exports\/([^/]+)$/.exec(ctx.subpath);
  return m ? { source: decodeURIComponent(m[1]!), id: decodeURIComponent(m[2]!) } : undefined;
};

/** `/ui/repositories/<name>/package?name=…` (one package) and `/ui/repositories/<name>/browse?path=…` (one folder). */
const contentViewOf = (ctx: PageContext): { kind: "package" | "browse"; repository: string } | undefined => {
  const m = /^\/([^/]+)\/(package|browse)$/.exec(ctx.subpath);
  return m ? { kind: m[2] as "package" | "browse", repository: decodeURIComponent(m[1]!) } : undefined;
};

/** `/ui/repositories/<name>/imports/<id>`: an import's progress and result. */
const importOf = (ctx: PageContext): { repository: string; id: string } | undefined => {
  const m = /^\/([^/]+)\/imports\/([^/]+)$/.exec(ctx.subpath);
  return m ? { repository: decodeURIComponent(m[1]!), id: decodeURIComponent(m[2]!) } : undefined;
};

/**
 * Repositories: the list (type, upstream, members), Create a repository and Limits; per
 * repository what it is, a group's members, a proxy's cooldown, its files, retention policy,
 * Deploy, Import, Export and Remove.
 */
export const repositoriesPage: ConsolePage = {
  slug: "repositories",
  nav: "Repositories",
  needs: "manage:read on * (manage:write to create, change or remove repositories, change retention or limits, or export; repository:write to deploy)",

  async get(ctx) {
    const exp = exportOf(ctx);
    if (exp) return exportView(ctx, exp.source, exp.id);
    const imp = importOf(ctx);
    if (imp) return importView(ctx, imp.repository, imp.id);
    const view = contentViewOf(ctx);
    if (view?.kind === "package") return packageView(ctx, view.repository, ctx.query.name ?? "");
    if (view?.kind === "browse") return folderView(ctx, view.repository, ctx.query.path ?? "");
    const name = repositoryOf(ctx);
    if (name === undefined) return overview(ctx);
    return repositoryView(ctx, name, async (detail, all) => ({
      above: html`${aboutSection(detail, all)}${await contentSections(ctx, detail)}${quotaSection(ctx, detail)}${scopeSection(ctx, detail)}${membersSection(ctx, detail, all)}${cooldownSection(ctx, detail)}`,
      below: html`${await mavenOptionsSection(ctx, detail)}${await importSection(ctx, detail, all)}${exportSection(ctx, detail, all)}${removeSection(ctx, detail, all)}`,
    }));
  },

  actions: {
    async create(ctx) {
      return createRepository(ctx, (draft) => overview(ctx, draft));
    },
    async "set-members"(ctx) {
      return setMembers(ctx, repositoryOf(ctx) ?? "");
    },
    async "set-cooldown"(ctx) {
      return setCooldown(ctx, repositoryOf(ctx) ?? "");
    },
    async "set-quota"(ctx) {
      return setQuota(ctx, repositoryOf(ctx) ?? "");
    },
    async "set-scope-from-path"(ctx) {
      return setScopeFromPath(ctx, repositoryOf(ctx) ?? "");
    },
    async "set-maven"(ctx) {
      return setMavenOptions(ctx, repositoryOf(ctx) ?? "");
    },
    async remove(ctx) {
      return removeRepository(ctx, repositoryOf(ctx) ?? "");
    },
    async "set-limit"(ctx) {
      const tenant = (ctx.form.tenant ?? "").trim();
      const n = Number((ctx.form.requestsPerMinute ?? "").trim());
      if (!tenant || !Number.isInteger(n) || n < 0) return { kind: "redirect", location: REPOSITORIES, notice: "Not done: give a tenant and a whole number of requests per minute" };
      return afterChange(await ctx.api("PUT", `/api/rate-limits/${seg(tenant)}`, { requestsPerMinute: n }), REPOSITORIES, `Rate limit for ${tenant} set to ${perMinute(n)}`);
    },
    async "remove-limit"(ctx) {
      const tenant = (ctx.form.tenant ?? "").trim();
      return afterChange(await ctx.api("DELETE", `/api/rate-limits/${seg(tenant)}`), REPOSITORIES, `Rate limit override for ${tenant} removed`);
    },
    async "set-retention"(ctx) {
      const name = repositoryOf(ctx) ?? "";
      return afterChange(await ctx.api("PUT", `/api/repositories/${seg(name)}/retention`, policyFromForm(ctx.form)), repositoryPath(name), `Retention policy of ${name} saved`);
    },
    async export(ctx) {
      return startExport(ctx, repositoryOf(ctx) ?? "");
    },
    async import(ctx) {
      return startImport(ctx, repositoryOf(ctx) ?? "");
    },
    async "remove-retention"(ctx) {
      const name = repositoryOf(ctx) ?? "";
      return afterChange(await ctx.api("DELETE", `/api/repositories/${seg(name)}/retention`), repositoryPath(name), `Retention policy of ${name} removed`);
    },
  },
};
