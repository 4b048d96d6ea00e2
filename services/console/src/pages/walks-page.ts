import type { WalkRunView as RunRecord, WalkView as Walk } from "@svc/contracts";
import { html, type Html } from "./html.js";
import { readableInstant, timeCell } from "./operations-parts.js";
import { expectOk, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { afterChange, csrfInput, inputRefusal, pager, seg } from "./page-widgets.js";


/** The walker's jobs (services/walker/src/domain/job-types.ts), offered as checkboxes; the walker names any it refuses. */
const JOBS = [
  { name: "retention", what: "removes what the repositories' retention policies say to" },
  { name: "reclaim", what: "deletes abandoned uploads, blobs no artifact links to and empty folders" },
  { name: "repair", what: "brings the index back in line with the files" },
  { name: "backfill", what: "indexes files the index does not know" },
];
const PAGE = 50;
const RUNS_PAGE = 20;
const walkUrl = (name: string) => `/ui/walks/${seg(name)}`;
const apiUrl = (name: string) => `/api/walks/${seg(name)}`;

function jobBoxes(checked: readonly string[]): Html {
  return html`<fieldset><legend>Jobs</legend>
${JOBS.map((j) => html`<label><input type="checkbox" name="job-${j.name}" value="on"${checked.includes(j.name) ? html` checked` : ""}> <code>${j.name}</code>: ${j.what}</label><br>`)}
</fieldset>`;
}
const jobsOf = (form: Record<string, string>) => JOBS.map((j) => j.name).filter((n) => form[`job-${n}`] !== undefined);

const scheduleHelp = html`<span class="hint" id="schedule-help">Six fields, seconds first, in UTC: <code>second minute hour day-of-month month day-of-week</code>, e.g. <code>0 0 3 * * *</code> every day at 03:00:00 UTC.</span>`;

function counts(c: RunRecord["counts"]): string {
  return Object.entries(c ?? {})
    .map(([job, n]) => `${job}: ${Object.entries(n).map(([k, v]) => `${k} ${v}`).join(", ")}`)
    .join("; ");
}

/** How long a run took, in seconds; blank when it never went over the store. */
const took = (ms: number | null | undefined): string => (ms === null || ms === undefined ? "" : `${(ms / 1000).toFixed(1)} s`);

/** The entries a run passed by (its problems), the first ones named. */
function problemsOf(r: RunRecord): Html | "" {
  const p = r.problems;
  if (!p || p.count === 0) return "";
  return html` <span class="problems">Passed by ${p.count} ${p.count === 1 ? "entry" : "entries"}:</span><ul>${p.first.map((e) => html`<li><code>${e.repository ?? ""}${e.path ? `:${e.path}` : ""}</code> ${e.detail}</li>`)}</ul>`;
}

function outcomeCell(r: RunRecord | null): Html | "" {
  if (!r) return html`<span>never run</span>`;
  return html`<span class="outcome outcome-${r.outcome}">${r.outcome}</span> ${timeCell(r.ended ?? r.started)}`;
}

/** A walk's fields as a form holds them: the saved walk's, or what the person typed. */
type Fields = Pick<Walk, "schedule" | "enabled" | "jobs">;
/** A form shown again with what was typed and the next run that would give, nothing saved. */
interface Draft<F extends Fields = Fields> {
  fields: F;
  nextRun: string;
}

const fieldsOf = (form: Record<string, string>): Fields => ({ schedule: form.schedule ?? "", enabled: form.enabled !== undefined, jobs: jobsOf(form) });
const formNextRun = (w: Pick<Walk, "enabled" | "nextRun">) => (w.enabled ? (w.nextRun ? readableInstant(w.nextRun) : "none") : "none: the walk is switched off");

/**
 * The walk as it would be with `body` (the API's dry run checks it as saving would), or why it
 * could not be; a missing right or a failure goes to the core's pages.
 */
async function preview(ctx: PageContext, method: string, path: string, body: object): Promise<string> {
  const res = await ctx.api<Walk>(method, `${path}?dryRun=true`, body);
  const why = inputRefusal(res);
  return why !== undefined ? `not valid: ${why}` : formNextRun(expectOk(res));
}
const PREVIEW_NOTICE = "Preview only: nothing is saved until you press the form's save button.";

// The save button comes first: Enter in a field submits with the first button, so it saves as before.
const submitButtons = (save: string, label: string, previewId: string) => html`<p class="actions">
<button type="submit" name="_action" value="${save}">${label}</button>
<button type="submit" name="_action" value="preview-${save}" id="${previewId}">Preview the next run</button>
</p>`;

const walkForm = (ctx: PageContext, name: string, f: Fields, nextRun: string): Html => html`<form method="post" action="${walkUrl(name)}" class="stack" id="edit-walk">
${csrfInput(ctx)}<input type="hidden" name="walk" value="${name}">
<label for="schedule">Schedule</label>
<input id="schedule" name="schedule" value="${f.schedule}" required aria-describedby="schedule-help" spellcheck="false">
${scheduleHelp}
<p>Next run: <output id="next-run" for="schedule">${nextRun}</output></p>
<label><input type="checkbox" name="enabled" value="on"${f.enabled ? html` checked` : ""}> Enabled</label>
${jobBoxes(f.jobs)}
${submitButtons("edit", "Save the walk", "preview-walk")}
</form>`;

async function listView(ctx: PageContext, draft?: Draft<Fields & { name: string }>): Promise<PageOutcome> {
  const add = draft?.fields ?? { name: "", schedule: "", enabled: true, jobs: [] };
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (ctx.query.after) q.set("after", ctx.query.after);
  const res = await ctx.api<Walk[]>("GET", `/api/walks?${q}`);
  const walks = expectOk(res);
  return {
    kind: "html",
    title: "Walks",
    ...(draft ? { notice: PREVIEW_NOTICE } : {}),
    main: html`${ctx.may("manage:write") ? html`<form method="post" action="/ui/walks" class="actions">
${csrfInput(ctx)}<input type="hidden" name="_action" value="run-now">
<button type="submit" id="walk-now">Walk the store now</button>
<span class="hint">Starts the rebuild walk at once with the jobs its entry names (every job when there is none). One walk goes over the store at a time.</span>
</form>` : ""}
<table class="data" id="walks">
<caption>Walks</caption>
<thead><tr><th scope="col">Walk</th><th scope="col">Schedule (UTC)</th><th scope="col">Enabled</th><th scope="col">Jobs</th><th scope="col">Next run</th><th scope="col">Last run</th></tr></thead>
<tbody>
${walks.map(
  (w) => html`<tr><th scope="row"><a href="${walkUrl(w.name)}">${w.name}</a></th><td><code>${w.schedule}</code></td><td>${w.enabled ? "yes" : "no"}</td><td>${w.jobs.join(", ")}</td><td>${timeCell(w.nextRun)}</td><td>${outcomeCell(w.lastRun)}</td></tr>`,
)}
</tbody>
</table>
${walks.length === 0 ? html`<p>No walk is defined.</p>` : ""}
${pager({ base: "/ui/walks", param: "after", current: ctx.query.after, next: res.headers["x-next-cursor"], label: "walks" })}
${ctx.may("manage:write") ? html`<h2>Add a walk</h2>
<form method="post" action="/ui/walks" class="stack" id="add-walk">
${csrfInput(ctx)}
<label for="new-name">Name</label>
<input id="new-name" name="name" value="${add.name}" required pattern="[A-Za-z0-9][A-Za-z0-9._\\-]{0,99}" spellcheck="false">
<label for="new-schedule">Schedule</label>
<input id="new-schedule" name="schedule" value="${add.schedule}" required placeholder="0 0 3 * * *" aria-describedby="schedule-help" spellcheck="false">
${scheduleHelp}
${draft ? html`<p>Next run: <output id="new-next-run" for="new-schedule">${draft.nextRun}</output></p>` : ""}
<label><input type="checkbox" name="enabled" value="on"${add.enabled ? html` checked` : ""}> Enabled</label>
${jobBoxes(add.jobs)}
${submitButtons("add", "Add the walk", "preview-new-walk")}
</form>` : ""}`,
  };
}

async function walkView(ctx: PageContext, name: string, draft?: Draft): Promise<PageOutcome> {
  const w = expectOk(await ctx.api<Walk>("GET", apiUrl(name)));
  const q = new URLSearchParams({ limit: String(RUNS_PAGE) });
  if (ctx.query.after) q.set("after", ctx.query.after);
  const runsRes = await ctx.api<RunRecord[]>("GET", `${apiUrl(name)}/runs?${q}`);
  const runs = expectOk(runsRes);
  return {
    kind: "html",
    title: `Walk ${w.name}`,
    ...(draft ? { notice: PREVIEW_NOTICE } : {}),
    main: html`<p><a href="/ui/walks">All walks</a></p>
${
  ctx.may("manage:write")
    ? html`${walkForm(ctx, w.name, draft?.fields ?? w, draft?.nextRun ?? formNextRun(w))}
<form method="post" action="${walkUrl(w.name)}" class="actions">
${csrfInput(ctx)}<input type="hidden" name="_action" value="remove"><input type="hidden" name="walk" value="${w.name}">
<button type="submit" id="remove-walk">Remove the walk ${w.name}</button>
<span class="hint">Its run records go with it.</span>
</form>`
    : html`<dl id="walk"><dt>Schedule (UTC)</dt><dd><code>${w.schedule}</code></dd><dt>Enabled</dt><dd>${w.enabled ? "yes" : "no"}</dd><dt>Jobs</dt><dd>${w.jobs.join(", ")}</dd><dt>Next run</dt><dd>${formNextRun(w)}</dd></dl>`
}
<p>Last run: ${outcomeCell(w.lastRun)}</p>
<table class="data" id="runs">
<caption>Runs of ${w.name}, oldest first</caption>
<thead><tr><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Outcome</th><th scope="col">Trigger</th><th scope="col">Jobs</th><th scope="col">Counts</th><th scope="col">Entries</th><th scope="col">Bytes</th><th scope="col">Blobs</th><th scope="col">Took</th><th scope="col">Node</th><th scope="col">Detail</th></tr></thead>
<tbody>
${runs.map(
  (r) => html`<tr id="run-${r.id}"><td>${timeCell(r.started)}</td><td>${timeCell(r.ended)}</td><td>${r.outcome}</td><td>${r.trigger}${r.scheduledFor ? html` (for ${timeCell(r.scheduledFor)})` : ""}</td><td>${r.jobs.join(", ")}</td><td>${counts(r.counts)}</td><td>${r.entries}</td><td>${r.bytes}</td><td>${r.blobs ?? 0}</td><td>${took(r.durationMs)}</td><td><code>${r.node}</code></td><td>${r.detail ?? ""}${r.reference ? html` Reference: <code>${r.reference}</code>` : ""}${problemsOf(r)}</td></tr>`,
)}
</tbody>
</table>
${runs.length === 0 ? html`<p>This walk has not run yet.</p>` : ""}
${pager({ base: walkUrl(w.name), param: "after", current: ctx.query.after, next: runsRes.headers["x-next-cursor"], label: "runs" })}`,
  };
}

const nextRunText = (w: Walk) => (w.nextRun ? readableInstant(w.nextRun) : "none");

/** The walk an action is about: the form's `walk` field, else the page's path. */
const walkOf = (ctx: PageContext) => ctx.form.walk || decodeURIComponent(ctx.subpath.replace(/^\//, ""));

export const walksPage: ConsolePage = {
  slug: "walks",
  nav: "Walks",
  needs: "manage:read on * (changing walks: manage:write on *)",
  get(ctx) {
    const name = ctx.subpath.replace(/^\/+|\/+$/g, "");
    return name === "" ? listView(ctx) : walkView(ctx, decodeURIComponent(name));
  },
  actions: {
    async "run-now"(ctx) {
      const res = await ctx.api<RunRecord>("POST", "/api/walks/run", {});
      // A 409 names the walk under way: shown as the notice.
      return afterChange(res, "/ui/walks", res.status === 202 ? `Walk started: run ${res.body.id} of walk ${res.body.walk} with ${res.body.jobs.join(", ")}.` : "");
    },
    async add(ctx) {
      const body = { name: ctx.form.name ?? "", ...fieldsOf(ctx.form) };
      const res = await ctx.api<Walk>("POST", "/api/walks", body);
      if (res.status !== 201) return afterChange(res, "/ui/walks", "");
      return { kind: "redirect", location: walkUrl(res.body.name), notice: `Walk ${res.body.name} added; next run ${nextRunText(res.body)}.` };
    },
    async edit(ctx) {
      const name = walkOf(ctx);
      const res = await ctx.api<Walk>("PUT", apiUrl(name), fieldsOf(ctx.form));
      return afterChange(res, walkUrl(name), res.status === 200 ? `Walk ${name} saved; next run ${nextRunText(res.body)}.` : "");
    },
    async "preview-add"(ctx) {
      const fields = { name: ctx.form.name ?? "", ...fieldsOf(ctx.form) };
      return listView(ctx, { fields, nextRun: await preview(ctx, "POST", "/api/walks", fields) });
    },
    async "preview-edit"(ctx) {
      const name = walkOf(ctx);
      const fields = fieldsOf(ctx.form);
      return walkView(ctx, name, { fields, nextRun: await preview(ctx, "PUT", apiUrl(name), fields) });
    },
    async remove(ctx) {
      const name = walkOf(ctx);
      return afterChange(await ctx.api("DELETE", apiUrl(name)), "/ui/walks", `Walk ${name} removed.`);
    },
  },
};
