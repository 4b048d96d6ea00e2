import type { WalkRunView as Run, WalkView as Walk } from "@svc/contracts";
import { EXIT } from "../cli-errors.js";
import { type Command, type CommandContext } from "../command-types.js";
import { pagingOptions, readListed } from "../paged-list.js";
import { emit, renderFields, renderTable, when } from "../table-output.js";

const outcomeCell = (r: Run | null) => (r ? `${r.outcome} ${when(r.started)}${r.reference ? ` Reference: ${r.reference}` : ""}` : "never run");
const countsCell = (r: Run) =>
  Object.entries(r.counts)
    .map(([job, c]) => `${job}: ${Object.entries(c).map(([k, v]) => `${k}=${v}`).join(" ") || "-"}`)
    .join("; ") || "-";

function showRun(ctx: CommandContext, r: Run): void {
  emit(ctx.out, r, (v) =>
    renderFields([
      ["run", v.id],
      ["walk", v.walk],
      ["jobs", v.jobs.join(", ")],
      ["started", when(v.started)],
      ["ended", when(v.ended)],
      ["outcome", v.outcome],
      ["entries", `${v.entries} (${v.bytes} bytes)`],
      ["blobs", String(v.blobs)],
      ["took", v.durationMs === null ? "-" : `${(v.durationMs / 1000).toFixed(1)} s`],
      ["counts", countsCell(v)],
      ...(v.reference ? [["reference", v.reference] as [string, string]] : []),
      ...(v.detail ? [["detail", v.detail] as [string, string]] : []),
    ]),
  );
}

const WAIT_POLL_MS = 500;

/** The run's record once it has ended, read from the walk's run list. */
async function untilEnded(ctx: CommandContext, run: Run): Promise<Run> {
  const api = await ctx.api();
  const signal = ctx.untilInterrupted();
  for (;;) {
    const page = await api.page<Run>(`/api/walks/${encodeURIComponent(run.walk)}/runs`, { limit: 50 });
    const now = page.items.find((r) => r.id === run.id);
    if (now && now.outcome !== "running") return now;
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    if (signal.aborted) return now ?? run;
  }
}

export const walksCommand: Command = {
  name: "walks",
  summary: "walks of the store: list, run now, a walk's runs",
  subcommands: [
    {
      name: "list",
      maxArgs: 0,
      summary: "each walk with its schedule (six-field cron, UTC), jobs, next run and last outcome",
      options: pagingOptions,
      examples: ["svc walks list"],
      async run(ctx) {
        const rows = await readListed<Walk>(ctx, "/api/walks", "svc walks list");
        emit(ctx.out, rows, (r) =>
          renderTable(r, [
            { header: "NAME", cell: (w) => w.name },
            { header: "ENABLED", cell: (w) => (w.enabled ? "yes" : "no") },
            { header: "SCHEDULE", cell: (w) => w.schedule },
            { header: "JOBS", cell: (w) => w.jobs.join(",") },
            { header: "NEXT RUN", cell: (w) => when(w.nextRun) },
            { header: "LAST RUN", cell: (w) => outcomeCell(w.lastRun) },
          ]),
        );
      },
    },
    {
      name: "run",
      args: "[<walk>]",
      maxArgs: 1,
      summary: "walk the store now: the rebuild walk's jobs (every job by default), or the named walk",
      options: { wait: { type: "boolean", description: "wait for the run to end and print its outcome (exit 4 if it failed)" } },
      examples: ["svc walks run", "svc walks run retention --wait"],
      async run(ctx) {
        const api = await ctx.api();
        const name = ctx.args[0];
        const path = name ? `/api/walks/${encodeURIComponent(name)}/run` : "/api/walks/run";
        let run = await api.json<Run>("POST", path, { body: {} });
        if (ctx.values.wait === true) {
          ctx.out.note(`Run ${run.id} of ${run.walk} started; waiting for it to end (Ctrl-C stops waiting, not the run).`);
          run = await untilEnded(ctx, run);
        }
        showRun(ctx, run);
        return run.outcome === "failed" ? EXIT.unexpected : EXIT.ok;
      },
    },
    {
      name: "runs",
      args: "<walk>",
      minArgs: 1,
      maxArgs: 1,
      summary: "a walk's run records, newest first",
      options: pagingOptions,
      examples: ["svc walks runs rebuild --limit 10"],
      async run(ctx) {
        const rows = await readListed<Run>(ctx, `/api/walks/${encodeURIComponent(ctx.args[0]!)}/runs`, `svc walks runs ${ctx.args[0]}`);
        emit(ctx.out, rows, (r) =>
          renderTable(r, [
            { header: "RUN", cell: (x) => x.id },
            { header: "TRIGGER", cell: (x) => x.trigger },
            { header: "STARTED", cell: (x) => when(x.started) },
            { header: "OUTCOME", cell: (x) => `${x.outcome}${x.reference ? ` Reference: ${x.reference}` : ""}` },
            { header: "COUNTS", cell: countsCell },
          ]),
        );
      },
    },
  ],
};
