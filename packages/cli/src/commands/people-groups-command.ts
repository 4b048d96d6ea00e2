import { usageError } from "../cli-errors.js";
import { str, type Command, type CommandContext } from "../command-types.js";
import { GRANT_ARGS, GRANT_HELP, grantBody, grantExpiresOption, grantsCell, scopeSegment, type Grant } from "../grant-specs.js";
import { pagingOptions, readListed } from "../paged-list.js";
import { emit, renderFields, renderTable } from "../table-output.js";

interface Person {
  id: string;
  label: string | null;
  grants: Grant[];
}

interface Group {
  name: string;
  label: string | null;
  grants: Grant[];
  members: number;
}

const group = (ctx: CommandContext) => `/api/groups/${encodeURIComponent(ctx.args[0]!)}`;

/** Person ids are provider-qualified (`oidc/<sub>`, `oauth/<id>`, `dev/admin`). */
function personIds(ids: string[]): string[] {
  for (const id of ids) if (!id.includes("/")) throw usageError(`"${id}" is not a person id: person ids look like oidc/<sub> or oauth/<id>.`);
  return ids;
}

export const peopleCommand: Command = {
  name: "people",
  summary: "people (signed-in console users): list, grant, revoke a grant, rights, remove",
  subcommands: [
    {
      name: "list",
      maxArgs: 0,
      summary: "people with their direct grants",
      options: pagingOptions,
      examples: ["svc people list"],
      async run(ctx) {
        const rows = await readListed<Person>(ctx, "/api/principals", "svc people list");
        emit(ctx.out, rows, (r) =>
          renderTable(r, [
            { header: "ID", cell: (p) => p.id },
            { header: "LABEL", cell: (p) => p.label ?? "-" },
            { header: "GRANTS", cell: (p) => grantsCell(p.grants) },
          ]),
        );
      },
    },
    {
      name: "grant",
      args: `<person id> ${GRANT_ARGS}`,
      minArgs: 3,
      summary: "set a person's direct rights at one scope",
      detail: GRANT_HELP,
      options: { ...grantExpiresOption, label: { type: "string", value: "text", description: "the person's label (name, e-mail)" } },
      examples: ["svc people grant oidc/alice '*' admin", "svc people grant oauth/1234 default read-only --expires P30D --label 'Bob'"],
      async run(ctx) {
        const [id] = personIds(ctx.args.slice(0, 1));
        const label = str(ctx.values.label);
        const body = { id, ...grantBody(ctx.args.slice(1), str(ctx.values.expires)), ...(label ? { label } : {}) };
        const g = await (await ctx.api()).json<Grant>("POST", "/api/principals/grants", { body });
        emit(ctx.out, g, (v) => `granted ${grantsCell([v])} to ${id}`);
      },
    },
    {
      name: "revoke-grant",
      args: "<person id> <scope>",
      minArgs: 2,
      maxArgs: 2,
      summary: "remove a person's direct rights at one scope",
      examples: ["svc people revoke-grant oidc/alice '*'"],
      async run(ctx) {
        const [id, scope] = ctx.args as [string, string];
        await (await ctx.api()).request("DELETE", "/api/principals/grants", { query: { id, scope } });
        emit(ctx.out, { id, scope, removed: true }, () => `removed the grant at ${scope} from ${id}`);
      },
    },
    {
      name: "rights",
      args: "<person id>",
      minArgs: 1,
      maxArgs: 1,
      summary: "what a person holds, directly and through groups",
      examples: ["svc people rights oidc/alice"],
      async run(ctx) {
        const r = await (await ctx.api()).json<{ id: string; groups: string[]; grants: Grant[] }>("GET", "/api/principals/rights", { query: { id: ctx.args[0] } });
        emit(ctx.out, r, (v) => renderFields([["id", v.id], ["groups", v.groups.join(", ") || "-"], ["grants", grantsCell(v.grants)]]));
      },
    },
    {
      name: "remove",
      args: "<person id>",
      minArgs: 1,
      maxArgs: 1,
      summary: "remove a person's direct grants and label (group memberships stay)",
      examples: ["svc people remove oidc/alice"],
      async run(ctx) {
        const id = ctx.args[0]!;
        await (await ctx.api()).request("DELETE", "/api/principals", { query: { id } });
        emit(ctx.out, { id, removed: true }, () => `removed ${id}`);
      },
    },
  ],
};

export const groupsCommand: Command = {
  name: "groups",
  summary: "groups: list, grant, revoke a grant, members list/add/remove, delete",
  subcommands: [
    {
      name: "list",
      maxArgs: 0,
      summary: "groups with their grants and member counts",
      options: pagingOptions,
      examples: ["svc groups list"],
      async run(ctx) {
        const rows = await readListed<Group>(ctx, "/api/groups", "svc groups list");
        emit(ctx.out, rows, (r) =>
          renderTable(r, [
            { header: "NAME", cell: (g) => g.name },
            { header: "LABEL", cell: (g) => g.label ?? "-" },
            { header: "MEMBERS", cell: (g) => String(g.members) },
            { header: "GRANTS", cell: (g) => grantsCell(g.grants) },
          ]),
        );
      },
    },
    {
      name: "grant",
      args: `<group> ${GRANT_ARGS}`,
      minArgs: 3,
      summary: "set a group's rights at one scope",
      detail: GRANT_HELP,
      options: grantExpiresOption,
      examples: ["svc groups grant release-managers default deploy"],
      async run(ctx) {
        const g = await (await ctx.api()).json<Grant>("POST", `${group(ctx)}/grants`, { body: grantBody(ctx.args.slice(1), str(ctx.values.expires)) });
        emit(ctx.out, g, (v) => `granted ${grantsCell([v])} to group ${ctx.args[0]}`);
      },
    },
    {
      name: "revoke-grant",
      args: "<group> <scope>",
      minArgs: 2,
      maxArgs: 2,
      summary: "remove a group's rights at one scope",
      examples: ["svc groups revoke-grant release-managers default"],
      async run(ctx) {
        await (await ctx.api()).request("DELETE", `${group(ctx)}/grants/${scopeSegment(ctx.args[1]!)}`);
        emit(ctx.out, { group: ctx.args[0], scope: ctx.args[1], removed: true }, (v) => `removed the grant at ${v.scope} from group ${v.group}`);
      },
    },
    {
      name: "members list",
      args: "<group>",
      minArgs: 1,
      maxArgs: 1,
      summary: "one page of a group's members",
      options: pagingOptions,
      examples: ["svc groups members list release-managers"],
      async run(ctx) {
        const rows = await readListed<{ id: string }>(ctx, `${group(ctx)}/members`, `svc groups members list ${ctx.args[0]}`);
        emit(ctx.out, rows, (r) => renderTable(r, [{ header: "MEMBER", cell: (m) => m.id }]));
      },
    },
    {
      name: "members add",
      args: "<group> <person id>...",
      minArgs: 2,
      summary: "add people to a group (the group is created if absent); their rights change before this returns",
      examples: ["svc groups members add release-managers oidc/alice oauth/1234"],
      async run(ctx) {
        const ids = personIds(ctx.args.slice(1));
        const api = await ctx.api();
        for (const id of ids) await api.request("POST", `${group(ctx)}/members`, { body: { id } });
        emit(ctx.out, { group: ctx.args[0], added: ids }, (v) => `added ${v.added.join(", ")} to group ${v.group}`);
      },
    },
    {
      name: "members remove",
      args: "<group> <person id>...",
      minArgs: 2,
      summary: "remove people from a group",
      examples: ["svc groups members remove release-managers oidc/alice"],
      async run(ctx) {
        const ids = ctx.args.slice(1);
        const api = await ctx.api();
        for (const id of ids) await api.request("DELETE", `${group(ctx)}/members`, { query: { id } });
        emit(ctx.out, { group: ctx.args[0], removed: ids }, (v) => `removed ${v.removed.join(", ")} from group ${v.group}`);
      },
    },
    {
      name: "delete",
      args: "<group>",
      minArgs: 1,
      maxArgs: 1,
      summary: "delete a group: its grants, label and memberships",
      examples: ["svc groups delete release-managers"],
      async run(ctx) {
        await (await ctx.api()).request("DELETE", group(ctx));
        emit(ctx.out, { group: ctx.args[0], deleted: true }, (v) => `deleted group ${v.group}`);
      },
    },
  ],
};
