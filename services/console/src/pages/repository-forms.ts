import { html, type Html } from "./html.js";
import { expectOk, type PageContext, type PageOutcome } from "./page-contract.js";
import { actionForm, field, inputRefusal, seg } from "./page-widgets.js";
import { REPOSITORIES, repositoryPath } from "./repository-view.js";
import { createQuota, createQuotaField } from "./repository-quota.js";
import { createScope, createScopeField } from "./repository-scope.js";

/**
 * Creating, reshaping and removing repositories on the Repositories page, each through the
 * admin API's own route (docs/administration/repositories.md) so its checks and messages are
 * the ones a person sees: `POST /api/repositories`, `PUT .../members`, `PUT .../gate`,
 * `DELETE /api/repositories/<name>`.
 */

export type RepositoryType = "hosted" | "proxy" | "group";
/** A repository as `GET /api/repositories` lists it (`type` absent from servers before proxies: hosted). */
export interface Repository {
  name: string;
  format: string;
  type?: RepositoryType;
  upstream?: { url: string } | null;
  members?: string[] | null;
  /** Authorised by the repository its path names without Service-Repository-Name (repository-scope.ts). */
  scopeFromPath?: boolean;
}
/** `GET /api/repositories/<name>`: the list's fields with its size and, where the gate runs, its minimum age. */
export interface RepositoryDetail extends Repository {
  artifacts?: number;
  bytes?: number;
  /** The storage quota and what counts against it (repository-quota.ts). */
  quotaBytes?: number | null;
  usedBytes?: number;
  gate?: { minAge: string | null };
}
/** A row of `GET /api/formats`. */
export interface FormatEntry {
  name: string;
  label: string;
  proxy: boolean;
}

export const typeOf = (r: Repository): RepositoryType => r.type ?? "hosted";
/** Repositories a group may name: hosted and proxy ones (a group of groups is refused). */
const memberCandidates = (all: readonly Repository[]) => all.filter((r) => typeOf(r) !== "group");
/** The groups that name `name` as a member. */
export const groupsNaming = (all: readonly Repository[], name: string) => all.filter((r) => r.members?.includes(name)).map((r) => r.name);

/** The members a form lists, in the order of its `member-1`, `member-2`, … selects, blanks left out. */
function membersOf(form: Record<string, string>): string[] {
  return Object.keys(form)
    .map((k) => /^member-(\d+)$/.exec(k))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((m) => (form[m[0]] ?? "").trim())
    .filter((v) => v !== "");
}

/**
 * `slots` selects "Member 1", "Member 2", … each offering `choices` (grouped by format when
 * they are of several), the first `chosen` selected in order: members in order without a script.
 */
function memberSelects(idPrefix: string, choices: readonly Repository[], chosen: readonly string[], slots: number): Html {
  const formats = [...new Set(choices.map((r) => r.format))];
  const option = (r: Repository, selected: string | undefined) =>
    html`<option value="${r.name}"${r.name === selected ? html` selected` : ""}>${r.name} (${typeOf(r)}${formats.length > 1 ? `, ${r.format}` : ""})</option>`;
  const options = (selected: string | undefined) => {
    // A member no longer offered (removed meanwhile) still shows, so saving does not drop it unseen.
    const gone = selected && !choices.some((r) => r.name === selected) ? html`<option value="${selected}" selected>${selected}</option>` : "";
    if (formats.length < 2) return html`${gone}${choices.map((r) => option(r, selected))}`;
    return html`${gone}${formats.map((f) => html`<optgroup label="${f}">${choices.filter((r) => r.format === f).map((r) => option(r, selected))}</optgroup>`)}`;
  };
  return html`${Array.from({ length: slots }, (_, i) => {
    const id = `${idPrefix}-${i + 1}`;
    return html`<p class="field"><label for="${id}">Member ${i + 1}</label> <select id="${id}" name="${`member-${i + 1}`}"><option value="">(none)</option>${options(chosen[i])}</select></p>`;
  })}`;
}

/** What a person typed into the Create form, shown again after a refusal: never the credentials. */
export interface CreateDraft {
  name: string;
  format: string;
  type: string;
  url: string;
  username: string;
  members: string[];
  /** The storage quota as typed. */
  quota: string;
  /** "Authorise by the path" ticked. */
  scopeFromPath?: boolean;
  /** The API's (or the console's) reason for not creating it. */
  problem: string;
  /** Whether credentials were typed (they are not shown again: the person types them again). */
  hadSecret: boolean;
}

/** Selects offered on the Create form at most; a group takes more members on its own page. */
const CREATE_SLOTS = 10;

/** The "Create a repository" section of the Repositories page. */
export function createSection(ctx: PageContext, formats: readonly FormatEntry[], all: readonly Repository[], draft?: CreateDraft): Html | "" {
  const d = draft ?? { name: "", format: formats[0]?.name ?? "", type: "hosted", url: "", username: "", members: [], quota: "", problem: "", hadSecret: false };
  const proxies = formats.filter((f) => f.proxy).map((f) => f.name);
  const candidates = memberCandidates(all);
  const radio = (value: RepositoryType, label: string, what: string) =>
    html`<label><input type="radio" name="type" value="${value}"${d.type === value ? html` checked` : ""}> ${label}</label> <small>${what}</small><br>`;
  const controls = html`
    ${draft ? html`<p class="problem" role="alert" id="create-problem">Not created: ${draft.problem}</p>` : ""}
    ${field({ id: "create-name", name: "name", label: "Name", value: d.name, required: true, hint: "letters, digits, ., _ and -, starting with a letter or digit; at most 128" })}
    <p class="field"><label for="create-format">Format</label> <select id="create-format" name="format" required>${formats.map(
      (f) => html`<option value="${f.name}"${f.name === d.format ? html` selected` : ""}>${f.label}</option>`,
    )}</select></p>
    ${createQuotaField(d.quota)}
    ${createScopeField(d.scopeFromPath === true)}
    <fieldset><legend>Type</legend>
      ${radio("hosted", "Hosted", "clients publish to it")}
      ${radio("proxy", "Proxy", `a cache of an upstream registry, fetching what it lacks (formats: ${proxies.join(", ") || "none yet"})`)}
      ${radio("group", "Group", "several repositories of its format behind one URL, asked in order")}
    </fieldset>
    <fieldset id="create-proxy"><legend>Proxy: its upstream</legend>
      ${field({ id: "create-url", name: "url", label: "Upstream URL", type: "url", value: d.url, placeholder: "https://registry.npmjs.org/", hint: "https on a public address unless svc.block-private-import-hosts is false" })}
      ${field({ id: "create-username", name: "username", label: "Upstream user name", value: d.username, autocomplete: "off" })}
      ${field({ id: "create-password", name: "password", label: "Upstream password", type: "password", autocomplete: "new-password" })}
      ${field({ id: "create-token", name: "token", label: "Upstream token", type: "password", autocomplete: "new-password", hint: "a user name and password, or a token, or neither; stored encrypted and never shown again" })}
      ${draft?.hadSecret ? html`<p id="create-secret-again">Type the upstream credentials again: they are never sent back to the browser.</p>` : ""}
    </fieldset>
    <fieldset id="create-group"><legend>Group: its members, in the order they are asked</legend>
      ${
        candidates.length
          ? memberSelects("create-member", candidates, d.members, Math.max(Math.min(candidates.length, CREATE_SLOTS), d.members.length))
          : html`<p>No hosted or proxy repository yet: create those first.</p>`
      }
      <p><small>Hosted and proxy repositories of the group's format; a publish to the group goes to its first hosted member. A group takes more members on its own page.</small></p>
    </fieldset>`;
  if (!ctx.may("manage:write")) return "";
  return html`<section aria-labelledby="create-heading" id="create">
    <h2 id="create-heading">Create a repository</h2>
    ${actionForm(ctx, { to: REPOSITORIES, action: "create", button: "Create repository", controls, className: "create" })}
  </section>`;
}

/** The `POST /api/repositories` body a Create form describes, or why the console will not send it. */
export function createRequest(form: Record<string, string>): { body: Record<string, unknown> } | { problem: string } {
  const name = (form.name ?? "").trim();
  const format = (form.format ?? "").trim();
  const type = (form.type ?? "hosted").trim() || "hosted";
  const url = (form.url ?? "").trim();
  const credentials: Record<string, string> = {};
  if ((form.username ?? "").trim()) credentials.username = form.username!.trim();
  if (form.password) credentials.password = form.password;
  if (form.token) credentials.token = form.token;
  const members = membersOf(form);
  const hasCredentials = Object.keys(credentials).length > 0;
  // Fields of another type are refused rather than dropped: they usually mean the wrong type was picked.
  if (type !== "proxy" && (url || hasCredentials)) return { problem: `an upstream is for a proxy repository: choose the type Proxy, or clear the upstream fields` };
  if (type !== "group" && members.length) return { problem: `members are for a group repository: choose the type Group, or set the members to (none)` };
  const limits = createQuota(form);
  if ("problem" in limits) return limits;
  const quota = { ...limits, ...createScope(form) };
  if (type === "proxy") return { body: { name, format, type, upstream: { url, ...(hasCredentials ? { credentials } : {}) }, ...quota } };
  if (type === "group") return { body: { name, format, type, members, ...quota } };
  return { body: type === "hosted" ? { name, format, ...quota } : { name, format, type, ...quota } };
}

/**
 * The `create` form post: the new repository's page, or the Repositories page again through
 * `again` with what was typed (never the credentials) and why it was not created.
 */
export async function createRepository(ctx: PageContext, again: (draft: CreateDraft) => Promise<PageOutcome>): Promise<PageOutcome> {
  const f = ctx.form;
  const draftWith = (problem: string): CreateDraft => ({
    name: (f.name ?? "").trim(),
    format: (f.format ?? "").trim(),
    type: (f.type ?? "hosted").trim(),
    url: (f.url ?? "").trim(),
    username: (f.username ?? "").trim(),
    members: membersOf(f),
    quota: (f.quota ?? "").trim(),
    scopeFromPath: f.scopeFromPath === "true",
    problem,
    hadSecret: Boolean(f.password || f.token),
  });
  const request = createRequest(f);
  if ("problem" in request) return again(draftWith(request.problem));
  const res = await ctx.api<RepositoryDetail>("POST", "/api/repositories", request.body);
  const why = inputRefusal(res);
  if (why !== undefined) return again(draftWith(why));
  const r = expectOk(res);
  return { kind: "redirect", location: repositoryPath(r.name), notice: `Repository ${r.name} created (${typeOf(r)}, ${r.format})` };
}

/** Type, upstream, members and the groups that name it: what the repository is, above its files. */
export function aboutSection(detail: RepositoryDetail, all: readonly Repository[]): Html {
  const naming = groupsNaming(all, detail.name);
  const link = (n: string) => html`<a href="${repositoryPath(n)}">${n}</a>`;
  return html`<section aria-labelledby="about-heading">
    <h2 id="about-heading">About ${detail.name}</h2>
    <dl id="repository-about">
      <dt>Format</dt><dd>${detail.format}</dd>
      <dt>Type</dt><dd id="repository-type">${typeOf(detail)}</dd>
      ${detail.upstream ? html`<dt>Upstream</dt><dd><code id="repository-upstream">${detail.upstream.url}</code> <small>(its credentials are never shown)</small></dd>` : ""}
      ${detail.members ? html`<dt>Members, in order</dt><dd><ol id="repository-members">${detail.members.map((m) => html`<li>${link(m)}</li>`)}</ol></dd>` : ""}
      ${naming.length ? html`<dt>Member of</dt><dd id="repository-groups">${naming.map((g, i) => html`${i ? ", " : ""}${link(g)}`)}</dd>` : ""}
      ${detail.artifacts !== undefined ? html`<dt>Artifacts</dt><dd id="repository-artifacts">${detail.artifacts}</dd>` : ""}
    </dl>
  </section>`;
}

/** A group's members, reordered or changed: every hosted or proxy repository of its format offered. */
export function membersSection(ctx: PageContext, detail: RepositoryDetail, all: readonly Repository[]): Html | "" {
  if (typeOf(detail) !== "group") return "";
  const members = detail.members ?? [];
  const choices = memberCandidates(all).filter((r) => r.format === detail.format && r.name !== detail.name);
  // Room for each choice, at most five more than it has (saving shows five more again).
  const slots = Math.max(members.length, Math.min(choices.length, members.length + 5));
  return html`<section aria-labelledby="members-heading" id="members">
    <h2 id="members-heading">Members</h2>
    <p>A read is answered by the first member, in this order, that has the path; a publish to ${detail.name} goes to its first hosted member. Choose (none) to take a member out.</p>
    ${
      slots
        ? actionForm(ctx, { to: repositoryPath(detail.name), action: "set-members", button: "Save members", controls: memberSelects("member", choices, members, slots) })
        : html`<p>No hosted or proxy ${detail.format} repository to add: create one first.</p>`
    }
  </section>`;
}

/** The `set-members` form post. */
export async function setMembers(ctx: PageContext, name: string): Promise<PageOutcome> {
  const members = membersOf(ctx.form);
  const res = await ctx.api("PUT", `/api/repositories/${seg(name)}/members`, { members });
  const why = inputRefusal(res);
  if (why !== undefined) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: ${why}` };
  expectOk(res);
  return { kind: "redirect", location: repositoryPath(name), notice: `Members of ${name} saved: ${members.join(", ")}` };
}

const minAgeText = (minAge: string | null) => (minAge === null ? "inherited from svc.gate.min-age" : minAge === "off" ? "off: no cooldown in this repository" : minAge);

/** A proxy repository's own minimum age (the cooldown of docs/administration/screening.md). */
export function cooldownSection(ctx: PageContext, detail: RepositoryDetail): Html | "" {
  if (typeOf(detail) !== "proxy" || !detail.gate) return "";
  const minAge = detail.gate.minAge;
  return html`<section aria-labelledby="cooldown-heading" id="cooldown">
    <h2 id="cooldown-heading">Cooldown</h2>
    <p>A version its upstream published less than the minimum age ago is neither listed nor fetched. Minimum age here: <strong id="cooldown-current">${minAgeText(minAge)}</strong>.</p>
    ${actionForm(ctx, {
      to: repositoryPath(detail.name),
      action: "set-cooldown",
      button: "Save minimum age",
      controls: field({ id: "cooldown-min-age", name: "minAge", label: "Minimum age", value: minAge ?? "", placeholder: "72h", hint: "a duration (72h, 3d, P3D); 0 or off: none here; blank: inherit svc.gate.min-age" }),
    })}
  </section>`;
}

/** The `set-cooldown` form post: blank inherits the setting. */
export async function setCooldown(ctx: PageContext, name: string): Promise<PageOutcome> {
  const typed = (ctx.form.minAge ?? "").trim();
  const res = await ctx.api<{ minAge: string | null }>("PUT", `/api/repositories/${seg(name)}/gate`, { minAge: typed === "" ? null : typed });
  const why = inputRefusal(res);
  if (why !== undefined) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: ${why}` };
  return { kind: "redirect", location: repositoryPath(name), notice: `Minimum age of ${name}: ${minAgeText(expectOk(res).minAge)}` };
}

/**
 * Remove, asking for the name typed again; "also remove…" (the API's `force`) offered only when
 * the repository holds artifacts or a group names it, the two things the API refuses on without it.
 */
export function removeSection(ctx: PageContext, detail: RepositoryDetail, all: readonly Repository[]): Html | "" {
  const naming = groupsNaming(all, detail.name);
  const artifacts = detail.artifacts ?? 0;
  const what = [artifacts ? `remove its ${artifacts} artifact${artifacts === 1 ? "" : "s"} (each as a client's DELETE would, with its event)` : "", naming.length ? `take it out of ${naming.join(", ")}` : ""].filter(Boolean);
  const force = what.length
    ? html`<p class="field"><label><input type="checkbox" name="force" value="true"> Also ${what.join(" and ")}</label></p>`
    : "";
  if (!ctx.may("manage:write")) return "";
  return html`<section aria-labelledby="remove-heading" id="remove">
    <h2 id="remove-heading">Remove ${detail.name}</h2>
    <p>Removes the repository${typeOf(detail) === "group" ? " (its members stay as they are)" : ""}: its URL answers 404 from then on. ${
      what.length ? `Without the choice below, the server refuses while it ${[artifacts ? "holds artifacts" : "", naming.length ? "is a member of a group" : ""].filter(Boolean).join(" or ")}.` : ""
    }</p>
    ${actionForm(ctx, {
      to: repositoryPath(detail.name),
      action: "remove",
      button: `Remove ${detail.name}`,
      controls: html`${field({ id: "remove-confirm", name: "confirm", label: "Type the repository's name to confirm", required: true, autocomplete: "off" })}${force}`,
    })}
  </section>`;
}

/** The `remove` form post: the name typed must be the repository's. */
export async function removeRepository(ctx: PageContext, name: string): Promise<PageOutcome> {
  if ((ctx.form.confirm ?? "").trim() !== name) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: type ${name} to confirm its removal` };
  const force = ctx.form.force === "true";
  const res = await ctx.api("DELETE", `/api/repositories/${seg(name)}${force ? "?force=true" : ""}`);
  const why = inputRefusal(res);
  if (why !== undefined) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: ${why}` };
  expectOk(res);
  return { kind: "redirect", location: REPOSITORIES, notice: `Repository ${name} removed` };
}

/**
 * Maven's one option of its own (`/api/repositories/<name>/maven`, a route of the Maven format):
 * whether a release's files may be deployed again. A hosted maven repository only: a proxy and a
 * group take no deploys of their own.
 */
export async function mavenOptionsSection(ctx: PageContext, detail: RepositoryDetail): Promise<Html | ""> {
  if (detail.format !== "maven" || typeOf(detail) !== "hosted") return "";
  const options = expectOk(await ctx.api<{ releaseRedeploy: boolean }>("GET", `/api/repositories/${seg(detail.name)}/maven`));
  return html`<section aria-labelledby="maven-heading" id="maven-options">
    <h2 id="maven-heading">Maven options</h2>
    <p>A release's file deployed again is refused (409) unless redeploys are allowed; snapshots may always be deployed again.</p>
    ${actionForm(ctx, {
      to: repositoryPath(detail.name),
      action: "set-maven",
      button: "Save Maven options",
      controls: html`<p class="field"><label><input type="checkbox" name="releaseRedeploy" value="true"${options.releaseRedeploy ? html` checked` : ""}> Allow redeploying a release</label></p>`,
    })}
  </section>`;
}

/** The `set-maven` form post. */
export async function setMavenOptions(ctx: PageContext, name: string): Promise<PageOutcome> {
  const releaseRedeploy = ctx.form.releaseRedeploy === "true";
  const res = await ctx.api("PUT", `/api/repositories/${seg(name)}/maven`, { releaseRedeploy });
  const why = inputRefusal(res);
  if (why !== undefined) return { kind: "redirect", location: repositoryPath(name), notice: `Not done: ${why}` };
  expectOk(res);
  return { kind: "redirect", location: repositoryPath(name), notice: `Release redeploys in ${name}: ${releaseRedeploy ? "allowed" : "refused"}` };
}
