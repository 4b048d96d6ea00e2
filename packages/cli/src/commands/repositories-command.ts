import type { ExportView } from "@svc/contracts";
import { EXIT } from "../cli-errors.js";
import type { Command, CommandContext } from "../command-types.js";
import { pagingOptions, readListed } from "../paged-list.js";
import { bytes, emit, renderFields, renderTable, when } from "../table-output.js";

interface Repository {
  name: string;
  format: string;
  created: string;
  retention: unknown;
}
interface Detail {
  name: string;
  format: string;
  created: string;
  artifacts: number;
  bytes: number;
}
type Export = ExportView;

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

const WAIT_POLL_MS = 500;

/** The export's record once it has ended; with progress drawn on standard error meanwhile. */
async function untilEnded(ctx: CommandContext, e: Export): Promise<Export> {
  const api = await ctx.api();
  const signal = ctx.untilInterrupted();
  const path = `${repo(e.source)}/exports/${e.id}`;
  let now = e;
  while (now.state === "running" && !signal.aborted) {
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    now = await api.json<Export>("GET", path);
    if (ctx.progress) ctx.stderr.write(`\rexport ${now.source} -> ${now.target}: ${counts(now)}\u001b[K`);
  }
  if (ctx.progress) ctx.stderr.write("\n");
  return now;
}

export const repositoriesCommand: Command = {
  name: "repositories",
  summary: "repositories: list, show, create, delete, export one into another",
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
      summary: "a repository's format, artifact count, bytes and creation time",
      examples: ["svc repositories show team-npm"],
      async run(ctx) {
        const d = await (await ctx.api()).json<Detail>("GET", repo(ctx.args[0]!));
        emit(ctx.out, d, (v) => renderFields([["name", v.name], ["format", v.format], ["artifacts", String(v.artifacts)], ["bytes", `${bytes(v.bytes)} (${v.bytes})`], ["created", when(v.created)]]));
      },
    },
    {
      name: "create",
      args: "<name> <format>",
      minArgs: 2,
      maxArgs: 2,
      summary: "create a repository of a format (raw, npm, maven, pypi)",
      examples: ["svc repositories create team-npm npm"],
      async run(ctx) {
        const d = await (await ctx.api()).json<Detail>("POST", "/api/repositories", { body: { name: ctx.args[0], format: ctx.args[1] } });
        emit(ctx.out, d, (v) => `Repository ${v.name} (${v.format}) created.`);
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
        e = await untilEnded(ctx, e);
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
  ],
};
