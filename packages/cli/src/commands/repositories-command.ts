import { parseByteSize, type ExportView, type ImportView } from "@svc/contracts";
import { EXIT, usageError } from "../cli-errors.js";
import type { Command, CommandContext } from "../command-types.js";
import { pagingOptions, readListed } from "../paged-list.js";
import { bytes, emit, renderFields, renderTable, when } from "../table-output.js";

interface Repository {
  name: string;
  format: string;
  type?: string;
  created: string;
  retention: unknown;
  scopeFromPath?: boolean;
}
interface Detail {
  name: string;
  format: string;
  type?: string;
  created: string;
  artifacts: number;
  bytes: number;
  quotaBytes?: number | null;
  usedBytes?: number;
  upstreamUrl?: string | null;
  members?: string[] | null;
  groups?: string[];
  scopeFromPath?: boolean;
}
type Export = ExportView;

/** A quota as typed (`500MiB`, `10GB`, bytes), or null for `none`; a usage error otherwise. */
const quotaOf = (typed: string): number | null => {
  if (typed.trim().toLowerCase() === "none") return null;
  const n = parseByteSize(typed);
  if (n === undefined) throw usageError(`not a storage quota: ${typed} (bytes, or with a unit: 500MiB, 10GB; none removes it)`);
  return n;
};
const storage = (v: Detail) => (v.quotaBytes ? `${bytes(v.usedBytes ?? 0)} of ${bytes(v.quotaBytes)} quota (${v.usedBytes ?? 0} of ${v.quotaBytes})` : `${bytes(v.usedBytes ?? 0)}, no quota`);

/** What a request without Service-Repository-Name is authorised against (docs/security/scope-from-path.md). */
const scopeText = (on: boolean | undefined) => (on ? "this repository (scopeFromPath on)" : "* (scopeFromPath off)");
const onOff = (typed: string): boolean => {
  const v = typed.trim().toLowerCase();
  if (v === "on" || v === "true") return true;
  if (v === "off" || v === "false") return false;
  throw usageError(`not on or off: ${typed}`);
};
/** A group's members as typed (`a,b,c`): at least one, no empty name. */
const membersOf = (typed: string): string[] => {
  const names = typed.split(",").map((m) => m.trim());
  if (names.length === 0 || names.some((m) => m === "")) throw usageError(`not a list of member repositories: ${typed} (names separated by commas, in the order they are asked)`);
  return names;
};

const repo = (name: string) => `/api/repositories/${encodeURIComponent(name)}`;
const counts = (e: Export) => `${e.copied} copied, ${e.skipped} skipped, ${e.refused} refused of ${e.total}`;

function showExport(ctx: CommandContext, e: Export): void {
  emit(ctx.out, e, (v) =>
    [
      renderFields([
        ["export", v.id],
        ["from", `${v.source} to ${v.target} (${v.format})`],
        ["state", v.state],
        ["counts", counts(v)],
        ["started", when(v.started)],
        ["ended", when(v.ended)],
        ...(v.detail ? [["detail", v.detail] as [string, string]] : []),
      ]),
      ...(v.refusals.length ? ["", renderTable(v.refusals, [{ header: "REFUSED", cell: (r) => r.path }, { header: "WHY", cell: (r) => r.reason }])] : []),
    ].join("\n"),
  );
}

const importCounts = (i: ImportView) => `${i.done} of ${i.packages} packages: ${i.imported} imported, ${i.skipped} skipped, ${i.held} held, ${i.refused} refused`;

function showImport(ctx: CommandContext, i: ImportView): void {
  emit(ctx.out, i, (v) =>
    [
      renderFields([
        ["import", v.id],
        ["into", `${v.repository} (${v.format})${v.target ? `, then ${v.target}` : ""}`],
        ["state", v.state],
        ["counts", importCounts(v)],
        ["started", when(v.started)],
        ["ended", when(v.ended)],
        ...(v.export ? [["export", `${v.export} (svc repositories export-status ${v.repository} ${v.export})`] as [string, string]] : []),
        ...(v.detail ? [["detail", v.detail] as [string, string]] : []),
      ]),
      ...(v.refusals.length ? ["", renderTable(v.refusals, [{ header: "REFUSED", cell: (r) => r.path }, { header: "WHY", cell: (r) => r.reason }])] : []),
    ].join("\n"),
  );
}

const WAIT_POLL_MS = 500;

/** A running job's record (an export, an import) once it has ended; with progress drawn on standard error meanwhile. */
async function untilEnded<T extends { state: string }>(ctx: CommandContext, path: string, first: T, line: (t: T) => string): Promise<T> {
  const api = await ctx.api();
  const signal = ctx.untilInterrupted();
  let now = first;
  while (now.state === "running" && !signal.aborted) {
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    now = await api.json<T>("GET", path);
    if (ctx.progress) ctx.stderr.write(`\r${line(now)}\u001b[K`);
  }
  if (ctx.progress) ctx.stderr.write("\n");
  return now;
}

export const repositoriesCommand: Command = {
  name: "repositories",
  summary: "repositories: list, show, create, delete, export one into another, import packages into a proxy",
  subcommands: [
    {
      name: "list",
      maxArgs: 0,
      summary: "each repository with its format",
      options: pagingOptions,
      examples: ["svc repositories list"],
      async run(ctx) {
        const rows = await readListed<Repository>(ctx, "/api/repositories", "svc repositories list");
        emit(ctx.out, rows, (r) =>
          renderTable(r, [
            { header: "NAME", cell: (x) => x.name },
            { header: "FORMAT", cell: (x) => x.format },
            { header: "TYPE", cell: (x) => x.type ?? "hosted" },
            { header: "SCOPE FROM PATH", cell: (x) => (x.scopeFromPath ? "on" : "off") },
            { header: "CREATED", cell: (x) => when(x.created) },
          ]),
        );
      },
    },
    {
      name: "show",
      args: "<name>",
      minArgs: 1,
      maxArgs: 1,
      summary: "a repository's format, type, artifact count, bytes, storage quota, scopeFromPath and creation time",
      examples: ["svc repositories show team-npm"],
      async run(ctx) {
        const d = await (await ctx.api()).json<Detail>("GET", repo(ctx.args[0]!));
        emit(ctx.out, d, (v) =>
          renderFields([
            ["name", v.name],
            ["format", v.format],
            ["type", v.type ?? "hosted"],
            ...(v.upstreamUrl ? [["upstream", v.upstreamUrl] as [string, string]] : []),
            ...(v.members ? [["members", v.members.join(", ") || "none"] as [string, string]] : []),
            ...(v.groups?.length ? [["in groups", v.groups.join(", ")] as [string, string]] : []),
            ["artifacts", String(v.artifacts)],
            ["bytes", `${bytes(v.bytes)} (${v.bytes})`],
            ["storage", storage(v)],
            ["header-less requests", scopeText(v.scopeFromPath)],
            ["created", when(v.created)],
          ]),
        );
      },
    },
    {
      name: "create",
      args: "<name> <format>",
      minArgs: 2,
      maxArgs: 2,
      summary: "create a repository of a format (raw, npm, maven, pypi, go, cargo, oci): hosted, a proxy (--proxy) or a group (--group)",
      detail:
        "A proxy's upstream credentials are not taken on the command line (they would stay in the shell's history): set them with the API or the console. --scope-from-path authorises a request without Service-Repository-Name against this repository (for npm, pip and other clients that cannot send the header).",
      options: {
        quota: { type: "string", value: "size", description: "its storage quota: bytes, or with a unit (500MiB, 10GB)" },
        proxy: { type: "string", value: "url", description: "a proxy repository of this upstream (e.g. https://registry.npmjs.org)" },
        group: { type: "string", value: "members", description: "a group repository of these members, in the order they are asked (a,b,c)" },
        "scope-from-path": { type: "boolean", description: "authorise requests without Service-Repository-Name against this repository" },
      },
      examples: [
        "svc repositories create team-npm npm",
        "svc repositories create team-npm npm --quota 10GiB --scope-from-path",
        "svc repositories create npmjs npm --proxy https://registry.npmjs.org",
        "svc repositories create npm-all npm --group team-npm,npmjs",
      ],
      async run(ctx) {
        const quota = typeof ctx.values.quota === "string" ? quotaOf(ctx.values.quota) : null;
        const proxy = typeof ctx.values.proxy === "string" ? ctx.values.proxy : undefined;
        const members = typeof ctx.values.group === "string" ? membersOf(ctx.values.group) : undefined;
        if (proxy !== undefined && members !== undefined) throw usageError("a repository is a proxy (--proxy) or a group (--group), not both");
        const kind = proxy !== undefined ? { type: "proxy", upstream: { url: proxy } } : members !== undefined ? { type: "group", members } : {};
        const body = { name: ctx.args[0], format: ctx.args[1], ...kind, ...(quota === null ? {} : { quotaBytes: quota }), ...(ctx.values["scope-from-path"] === true ? { scopeFromPath: true } : {}) };
        const d = await (await ctx.api()).json<Detail>("POST", "/api/repositories", { body });
        const what = [d.format, d.type && d.type !== "hosted" ? d.type : "", d.upstreamUrl ? `of ${d.upstreamUrl}` : "", d.members ? `of ${d.members.join(", ")}` : ""].filter(Boolean).join(" ");
        const extras = [d.quotaBytes ? `a storage quota of ${bytes(d.quotaBytes)}` : "", d.scopeFromPath ? "scopeFromPath on" : ""].filter(Boolean);
        emit(ctx.out, d, () => `Repository ${d.name} (${what}) created${extras.length ? ` with ${extras.join(" and ")}` : ""}.`);
      },
    },
    {
      name: "set-scope-from-path",
      args: "<name> <on|off>",
      minArgs: 2,
      maxArgs: 2,
      summary: "authorise requests without Service-Repository-Name against this repository (on) or against * (off)",
      detail: "Takes effect at once on every gateway, no restart. A request that sends Service-Repository-Name is authorised against the header's repository either way.",
      examples: ["svc repositories set-scope-from-path team-npm on"],
      async run(ctx) {
        const scopeFromPath = onOff(ctx.args[1]!);
        const d = await (await ctx.api()).json<Detail>("PATCH", repo(ctx.args[0]!), { body: { scopeFromPath } });
        emit(ctx.out, d, (v) => `${v.name}: a request without Service-Repository-Name is authorised against ${scopeText(v.scopeFromPath)}.`);
      },
    },
    {
      name: "set-quota",
      args: "<name> <size|none>",
      minArgs: 2,
      maxArgs: 2,
      summary: "set a repository's storage quota (a publish over it is refused), or remove it with none",
      detail: "A quota below what the repository holds is allowed: nothing is removed, and what would add to it is refused.",
      examples: ["svc repositories set-quota team-npm 10GiB", "svc repositories set-quota team-npm none"],
      async run(ctx) {
        const quotaBytes = quotaOf(ctx.args[1]!);
        const d = await (await ctx.api()).json<Detail>("PATCH", repo(ctx.args[0]!), { body: { quotaBytes } });
        emit(ctx.out, d, (v) => `Storage of ${v.name}: ${storage(v)}.`);
      },
    },
    {
      name: "delete",
      args: "<name>",
      minArgs: 1,
      maxArgs: 1,
      summary: "remove a repository (refused while it holds artifacts, unless --force)",
      options: { force: { type: "boolean", description: "remove its artifacts with it (each with its artifact.removed event)" } },
      examples: ["svc repositories delete old-raw", "svc repositories delete old-raw --force"],
      async run(ctx) {
        await (await ctx.api()).request("DELETE", repo(ctx.args[0]!), { query: { force: ctx.values.force === true ? "true" : undefined } });
        ctx.out.out(ctx.out.json ? JSON.stringify({ removed: ctx.args[0] }) : `Repository ${ctx.args[0]} removed.`);
      },
    },
    {
      name: "export",
      args: "<source> <target>",
      minArgs: 2,
      maxArgs: 2,
      summary: "copy a repository's contents into another of the same format (what the target holds is skipped)",
      detail:
        "Starts the export and prints its id; with --wait, follows it and prints the result. Exit 3 when it ended with refusals, 4 when it failed or was interrupted.",
      options: { wait: { type: "boolean", description: "wait for the export to end (Ctrl-C stops waiting, not the export)" } },
      examples: ["svc repositories export team-npm team-npm-copy --wait"],
      async run(ctx) {
        const [source, target] = ctx.args as [string, string];
        let e = await (await ctx.api()).json<Export>("POST", `${repo(source)}/export`, { body: { target } });
        if (ctx.values.wait !== true) {
          emit(ctx.out, e, (v) => `Export ${v.id} of ${v.source} into ${v.target} started: svc repositories export-status ${v.source} ${v.id}`);
          return;
        }
        ctx.out.note(`Export ${e.id} of ${source} into ${target} started; waiting for it to end (Ctrl-C stops waiting, not the export).`);
        e = await untilEnded(ctx, `${repo(e.source)}/exports/${e.id}`, e, (now) => `export ${now.source} -> ${now.target}: ${counts(now)}`);
        showExport(ctx, e);
        return e.state === "failed" || e.state === "interrupted" ? EXIT.unexpected : e.refused > 0 ? EXIT.refused : EXIT.ok;
      },
    },
    {
      name: "export-status",
      args: "<source> <export-id>",
      minArgs: 2,
      maxArgs: 2,
      summary: "an export's progress or result (copied, skipped, refused with reasons)",
      examples: ["svc repositories export-status team-npm 0b6f3c1e-…"],
      async run(ctx) {
        showExport(ctx, await (await ctx.api()).json<Export>("GET", `${repo(ctx.args[0]!)}/exports/${encodeURIComponent(ctx.args[1]!)}`));
      },
    },
    {
      name: "import",
      args: "<proxy> <package...>",
      minArgs: 2,
      summary: "fetch packages from a proxy repository's upstream now, through the screening gate (then copy them into a hosted repository with --into)",
      detail:
        "Each package is a name (every version) or one version: npm name or name@version. Starts the import and prints its id; with --wait, follows it and prints the counts. Exit 3 when it ended with refusals, 4 when it failed.",
      options: {
        into: { type: "string", value: "repository", description: "a hosted repository of the same format to copy the imported packages into once fetched" },
        wait: { type: "boolean", description: "wait for the import to end (Ctrl-C stops waiting, not the import)" },
      },
      examples: ["svc repositories import npmjs lodash left-pad@1.3.0 --into team-npm --wait"],
      async run(ctx) {
        const [proxy, ...packages] = ctx.args as [string, ...string[]];
        const into = typeof ctx.values.into === "string" ? ctx.values.into : undefined;
        let i = await (await ctx.api()).json<ImportView>("POST", `${repo(proxy)}/imports`, { body: { packages, ...(into ? { target: into } : {}) } });
        if (ctx.values.wait !== true) {
          emit(ctx.out, i, (v) => `Import ${v.id} of ${v.packages} package${v.packages === 1 ? "" : "s"} into ${v.repository} started: svc repositories import-status ${v.repository} ${v.id}`);
          return;
        }
        ctx.out.note(`Import ${i.id} into ${proxy} started; waiting for it to end (Ctrl-C stops waiting, not the import).`);
        i = await untilEnded(ctx, `${repo(proxy)}/imports/${i.id}`, i, (now) => `import into ${now.repository}: ${importCounts(now)}`);
        showImport(ctx, i);
        return i.state === "failed" ? EXIT.unexpected : i.refused > 0 ? EXIT.refused : EXIT.ok;
      },
    },
    {
      name: "import-status",
      args: "<proxy> <import-id>",
      minArgs: 2,
      maxArgs: 2,
      summary: "an import's progress or result (imported, skipped, held, refused with reasons)",
      examples: ["svc repositories import-status npmjs 0b6f3c1e-…"],
      async run(ctx) {
        showImport(ctx, await (await ctx.api()).json<ImportView>("GET", `${repo(ctx.args[0]!)}/imports/${encodeURIComponent(ctx.args[1]!)}`));
      },
    },
  ],
};
