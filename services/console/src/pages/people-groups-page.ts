import { html, type Html } from "./html.js";
import { expectOk, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { PAGE_SIZE, actionForm, afterChange, field, grantText, listPage, pager, seg, type GrantView } from "./page-widgets.js";
import { grantBody, grantControls, grantList, grantScope } from "./grant-forms.js";

interface Person {
  id: string;
  label: string | null;
  grants: GrantView[];
}
interface Group {
  name: string;
  label: string | null;
  grants: GrantView[];
  members: number;
}

const BASE = "/ui/people";
const groupPath = (name: string) => `${BASE}/groups/${seg(name)}`;

async function overview(ctx: PageContext): Promise<PageOutcome> {
  const [people, groups] = await Promise.all([
    listPage<Person>(ctx, "/api/principals", { limit: String(PAGE_SIZE), after: ctx.query.people }),
    listPage<Group>(ctx, "/api/groups", { limit: String(PAGE_SIZE), after: ctx.query.groups }),
  ]);
  const main = html`
    <section aria-labelledby="people-heading">
      <h2 id="people-heading">People</h2>
      <p>A person's id is the one their sign-in gives (<code>oidc/&lt;sub&gt;</code>, <code>oauth/&lt;id&gt;</code>); the no-access screen shows it to them.
        Rights held through groups are listed with the group.</p>
      ${ctx.may("manage:write") ? html`<h3>Grant a person rights</h3>` : ""}
      ${actionForm(ctx, { to: BASE, action: "grant-person", button: "Grant", controls: html`${field({ id: "person-id", name: "id", label: "Person id", required: true, placeholder: "oidc/…" })}${grantControls("person")}` })}
      <table class="list" id="people">
        <thead><tr><th scope="col">Person</th><th scope="col">Label</th><th scope="col">Direct grants</th></tr></thead>
        <tbody>${
          people.items.length
            ? people.items.map((p) => html`<tr><td><code>${p.id}</code> <a href="/ui/credentials?owner=${encodeURIComponent(p.id)}" class="person-keys">personal keys</a></td><td>${p.label ?? ""}</td><td>${grantList(ctx, p.grants, BASE, "remove-person-grant", { id: p.id })}</td></tr>`)
            : html`<tr><td colspan="3">No people with grants or metadata yet.</td></tr>`
        }</tbody>
      </table>
      ${pager({ base: BASE, param: "people", current: ctx.query.people, next: people.next, keep: { groups: ctx.query.groups }, label: "people" })}
    </section>
    <section aria-labelledby="groups-heading">
      <h2 id="groups-heading">Groups</h2>
      ${ctx.may("manage:write") ? html`<h3>Add a member</h3>
      <p>Adding a first member creates the group.</p>` : ""}
      ${actionForm(ctx, {
        to: BASE,
        action: "add-member",
        button: "Add member",
        controls: html`${field({ id: "member-group", name: "group", label: "Group", required: true })}${field({ id: "member-id", name: "id", label: "Person id", required: true })}`,
      })}
      <table class="list" id="groups">
        <thead><tr><th scope="col">Group</th><th scope="col">Label</th><th scope="col">Grants</th><th scope="col">Members</th></tr></thead>
        <tbody>${
          groups.items.length
            ? groups.items.map((g) => html`<tr><td><a href="${groupPath(g.name)}">${g.name}</a></td><td>${g.label ?? ""}</td><td>${g.grants.map((x) => html`${grantText(x)}<br>`)}</td><td>${g.members}</td></tr>`)
            : html`<tr><td colspan="4">No groups yet.</td></tr>`
        }</tbody>
      </table>
      ${pager({ base: BASE, param: "groups", current: ctx.query.groups, next: groups.next, keep: { people: ctx.query.people }, label: "groups" })}
    </section>`;
  return { kind: "html", title: "People and groups", main };
}

async function groupView(ctx: PageContext, name: string): Promise<PageOutcome> {
  const here = groupPath(name);
  const [members, group] = await Promise.all([
    listPage<{ id: string }>(ctx, `/api/groups/${seg(name)}/members`, { limit: String(PAGE_SIZE), after: ctx.query.after }),
    ctx.api<Group>("GET", `/api/groups/${seg(name)}`).then(expectOk),
  ]);
  const main = html`
    <p><a href="${BASE}">All people and groups</a></p>
    <section aria-labelledby="group-grants-heading">
      <h2 id="group-grants-heading">Grants of ${name}</h2>
      ${grantList(ctx, group.grants, here, "remove-group-grant", {})}
      ${ctx.may("manage:write") ? html`<h3>Grant the group rights</h3>` : ""}
      ${actionForm(ctx, { to: here, action: "grant-group", button: "Grant", controls: grantControls("group") })}
    </section>
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members of ${name}</h2>
      ${actionForm(ctx, { to: here, action: "add-member", button: "Add member", fields: { group: name }, controls: field({ id: "add-member-id", name: "id", label: "Person id", required: true }) })}
      <table class="list" id="members">
        <thead><tr><th scope="col">Person</th><th scope="col">Remove</th></tr></thead>
        <tbody>${
          members.items.length
            ? members.items.map((m) => html`<tr><td><code>${m.id}</code></td><td>${actionForm(ctx, { to: here, action: "remove-member", button: "Remove", fields: { id: m.id } })}</td></tr>`)
            : html`<tr><td colspan="2">No members.</td></tr>`
        }</tbody>
      </table>
      ${pager({ base: here, param: "after", current: ctx.query.after, next: members.next, label: "members" })}
    </section>
    ${
      ctx.may("manage:write")
        ? html`<section aria-labelledby="delete-group-heading">
      <h2 id="delete-group-heading">Delete the group</h2>
      <p>Removes its grants, label and every membership; its members keep their own grants.</p>
      ${actionForm(ctx, { to: here, action: "delete-group", button: `Delete group ${name}` })}
    </section>`
        : ""
    }`;
  return { kind: "html", title: `Group ${name}`, main };
}

/** The group a form on `/ui/people/groups/<name>` acts on, or the `group` field on the overview. */
function groupOf(ctx: PageContext): string {
  const m = /^\/groups\/([^/]+)$/.exec(ctx.subpath);
  return m ? decodeURIComponent(m[1]!) : (ctx.form.group ?? "").trim();
}

/** People with their direct grants, groups with grants and paged members; grant, remove, add and remove members. */
export const peopleGroupsPage: ConsolePage = {
  slug: "people",
  nav: "People and groups",
  needs: "manage:read on * (manage:write to change grants or members)",

  async get(ctx) {
    const m = /^\/groups\/([^/]+)$/.exec(ctx.subpath);
    return m ? groupView(ctx, decodeURIComponent(m[1]!)) : overview(ctx);
  },

  actions: {
    async "grant-person"(ctx) {
      const id = (ctx.form.id ?? "").trim();
      return afterChange(await ctx.api("POST", "/api/principals/grants", { id, ...grantBody(ctx.form) }), BASE, `Granted ${id} rights at ${grantScope(ctx.form)}`);
    },
    async "remove-person-grant"(ctx) {
      const q = new URLSearchParams({ id: ctx.form.id ?? "", scope: ctx.form.scope ?? "" });
      return afterChange(await ctx.api("DELETE", `/api/principals/grants?${q}`), BASE, `Removed ${ctx.form.id ?? ""}'s rights at ${ctx.form.scope ?? ""}`);
    },
    async "grant-group"(ctx) {
      const name = groupOf(ctx);
      return afterChange(await ctx.api("POST", `/api/groups/${seg(name)}/grants`, grantBody(ctx.form)), groupPath(name), `Granted ${name} rights at ${grantScope(ctx.form)}`);
    },
    async "remove-group-grant"(ctx) {
      const name = groupOf(ctx);
      return afterChange(await ctx.api("DELETE", `/api/groups/${seg(name)}/grants/${seg(ctx.form.scope ?? "")}`), groupPath(name), `Removed ${name}'s rights at ${ctx.form.scope ?? ""}`);
    },
    async "add-member"(ctx) {
      const name = groupOf(ctx);
      const id = (ctx.form.id ?? "").trim();
      return afterChange(await ctx.api("POST", `/api/groups/${seg(name)}/members`, { id }), groupPath(name), `Added ${id} to ${name}`);
    },
    async "delete-group"(ctx) {
      const name = groupOf(ctx);
      return afterChange(await ctx.api("DELETE", `/api/groups/${seg(name)}`), BASE, `Group ${name} deleted`);
    },
    async "remove-member"(ctx) {
      const name = groupOf(ctx);
      const q = new URLSearchParams({ id: ctx.form.id ?? "" });
      return afterChange(await ctx.api("DELETE", `/api/groups/${seg(name)}/members?${q}`), groupPath(name), `Removed ${ctx.form.id ?? ""} from ${name}`);
    },
  },
};
