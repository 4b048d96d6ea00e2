import { describe, expect, it } from "vitest";
import { cachesPage } from "./caches-page.js";
import { logsPage } from "./logs-page.js";
import { metricsPage } from "./metrics-page.js";
import { ApiRefusal, type ApiResult, type PageContext, type PageOutcome } from "./page-contract.js";
import { parseExposition } from "./prometheus-text.js";
import { settingsPage } from "./settings-page.js";
import { walksPage } from "./walks-page.js";

type Call = { method: string; path: string; body?: unknown };
/** A page context whose API answers from a table of `METHOD path` -> result, recording the calls. */
function context(answers: Record<string, Partial<ApiResult>>, over: Partial<PageContext> = {}) {
  const calls: Call[] = [];
  const ctx: PageContext = {
    person: { id: "dev/admin", tenant: "default" },
    async api(method, path, body) {
      calls.push({ method, path, body });
      const key = Object.keys(answers).find((k) => `${method} ${path}` === k || `${method} ${path.split("?")[0]}` === k);
      if (!key) throw new Error(`unexpected call ${method} ${path}`);
      return { status: 200, headers: {}, body: undefined, ...answers[key] } as ApiResult;
    },
    subpath: "",
    query: {},
    form: {},
    csrf: "tok-123",
    // An administrator unless a test says otherwise.
    may: () => true,
    options: { deployEnabled: false, publicBaseUrl: "" },
    ...over,
  };
  return { ctx, calls };
}
const main = (o: PageOutcome) => (o.kind === "html" ? o.main.text : "");
const forbidden = { status: 403, body: { title: "Forbidden", detail: "this key does not hold manage:read on *" } };

describe("Caches page", () => {
  it("lists each cache with its time to live, hits and size, and clears them by a form carrying the token", async () => {
    const { ctx, calls } = context({
      "GET /api/caches": { body: { node: "gateway@h:1", caches: [{ name: "credentials", description: "keys and people <rights>", ttlSeconds: 300, hits: 9, misses: 1, size: 4 }] } },
      "POST /api/caches/clear": { body: { node: "gateway@h:1", cleared: ["credentials"], announced: true } },
    });
    const html = main(await cachesPage.get(ctx));
    expect(html).toContain("<code>credentials</code>");
    expect(html).toContain("keys and people &lt;rights&gt;");
    expect(html).toContain("5 min");
    expect(html).toContain("90 %");
    expect(html).toContain('name="_csrf" value="tok-123"');
    expect(html).toContain("Clear caches on this node");
    const done = await cachesPage.actions!.clear!(ctx);
    expect(calls.at(-1)).toEqual({ method: "POST", path: "/api/caches/clear", body: {} });
    expect(done).toMatchObject({ kind: "redirect", location: "/ui/caches", notice: expect.stringContaining("every other gateway was told") });
  });

  it("lets a refusal through for the core's 403 page", async () => {
    const { ctx } = context({ "GET /api/caches": forbidden });
    await expect(cachesPage.get(ctx)).rejects.toMatchObject({ status: 403, detail: expect.stringContaining("manage:read") });
  });
});

const walk = { name: "nightly", schedule: "0 0 3 * * *", enabled: true, jobs: ["reclaim"], nextRun: "2030-01-02T03:00:00.000Z", lastRun: null };

describe("Walks page", () => {
  it("lists walks with their next run in UTC, pages with the walker's cursor, and offers walk-now and add", async () => {
    const { ctx, calls } = context({ "GET /api/walks": { body: [walk], headers: { "x-next-cursor": "nightly" } } }, { query: { after: "a" } });
    const html = main(await walksPage.get(ctx));
    expect(calls[0]!.path).toBe("/api/walks?limit=50&after=a");
    expect(html).toContain('href="/ui/walks/nightly"');
    expect(html).toContain("Wed 2 Jan 2030, 03:00:00 UTC");
    expect(html).toContain("never run");
    expect(html).toContain('href="/ui/walks?after=nightly"');
    expect(html).toContain("Walk the store now");
    expect(html).toContain('name="job-retention"');
  });

  it("shows a walk's form with the next-run preview and its runs", async () => {
    const run = { id: "r1", walk: "nightly", trigger: "manual", scheduledFor: null, started: "2030-01-01T00:00:00.000Z", ended: "2030-01-01T00:00:05.000Z", outcome: "succeeded", jobs: ["reclaim"], counts: { reclaim: { removed: 2 } }, entries: 10, bytes: 99, node: "walker@h", reference: null, detail: null };
    const { ctx } = context({ "GET /api/walks/nightly": { body: walk }, "GET /api/walks/nightly/runs": { body: [run] } }, { subpath: "/nightly" });
    const html = main(await walksPage.get(ctx));
    expect(html).toContain('value="0 0 3 * * *"');
    expect(html).toMatch(/<output id="next-run"[^>]*>Wed 2 Jan 2030, 03:00:00 UTC/);
    expect(html).toContain("reclaim: removed 2");
  });

  it("shows how many blobs a run saw and how long it took", async () => {
    const run = { id: "r3", walk: "nightly", trigger: "manual", scheduledFor: null, started: "2030-01-01T00:00:00.000Z", ended: "2030-01-01T00:00:05.000Z", outcome: "succeeded", jobs: ["repair"], counts: { repair: { checked: 7 } }, entries: 10, bytes: 99, blobs: 7, durationMs: 4_250, node: "walker@h", reference: null, detail: null };
    const { ctx } = context({ "GET /api/walks/nightly": { body: walk }, "GET /api/walks/nightly/runs": { body: [run] } }, { subpath: "/nightly" });
    const html = main(await walksPage.get(ctx));
    expect(html).toContain('<th scope="col">Blobs</th><th scope="col">Took</th>');
    expect(html).toContain("<td>10</td><td>99</td><td>7</td><td>4.3 s</td>");
  });

  it("names the entries a run passed by, escaped", async () => {
    const run = {
      id: "r2", walk: "nightly", trigger: "manual", scheduledFor: null, started: "2030-01-01T00:00:00.000Z", ended: "2030-01-01T00:00:05.000Z", outcome: "succeeded", jobs: ["backfill"],
      counts: {}, entries: 3, bytes: 9, node: "walker@h", reference: null, detail: null,
      problems: { count: 2, first: [{ repository: "default", path: "a/<b>.txt", detail: "backfill: artifacts service answered 400" }] },
    };
    const { ctx } = context({ "GET /api/walks/nightly": { body: walk }, "GET /api/walks/nightly/runs": { body: [run] } }, { subpath: "/nightly" });
    const html = main(await walksPage.get(ctx));
    expect(html).toContain("Passed by 2 entries:");
    expect(html).toContain("<code>default:a/&lt;b&gt;.txt</code> backfill: artifacts service answered 400");
  });

  it("adds, edits and removes a walk with the jobs ticked, and shows a refusal as the notice", async () => {
    const { ctx, calls } = context({
      "POST /api/walks": { status: 201, body: walk },
      "PUT /api/walks/nightly": { status: 400, body: { detail: '"bad" is not a valid schedule: a schedule has six fields' } },
      "DELETE /api/walks/nightly": { status: 204 },
    });
    ctx.form = { name: "nightly", schedule: "0 0 3 * * *", enabled: "on", "job-reclaim": "on", "job-repair": "on" };
    expect(await walksPage.actions!.add!(ctx)).toMatchObject({ kind: "redirect", location: "/ui/walks/nightly", notice: expect.stringContaining("next run Wed 2 Jan 2030") });
    expect(calls[0]!.body).toEqual({ name: "nightly", schedule: "0 0 3 * * *", enabled: true, jobs: ["reclaim", "repair"] });
    ctx.form = { walk: "nightly", schedule: "bad", "job-reclaim": "on" };
    expect(await walksPage.actions!.edit!(ctx)).toMatchObject({ notice: expect.stringContaining("six fields") });
    expect(calls[1]!.body).toEqual({ schedule: "bad", enabled: false, jobs: ["reclaim"] });
    ctx.form = { walk: "nightly" };
    expect(await walksPage.actions!.remove!(ctx)).toMatchObject({ location: "/ui/walks", notice: "Walk nightly removed." });
  });

  it("previews the next run of what was typed through the API's dry run, keeps the typed fields, and saves nothing", async () => {
    const weekly = { ...walk, schedule: "0 30 5 * * TUE", nextRun: "2030-01-08T05:30:00.000Z" };
    const { ctx, calls } = context(
      {
        "PUT /api/walks/nightly": { body: weekly },
        "GET /api/walks/nightly": { body: walk },
        "GET /api/walks/nightly/runs": { body: [] },
        "POST /api/walks": { status: 400, body: { detail: '"0 61 * * * *" is not a valid schedule: value 61' } },
        "GET /api/walks": { body: [walk] },
      },
      { subpath: "/nightly" },
    );
    ctx.form = { walk: "nightly", schedule: "0 30 5 * * TUE", enabled: "on", "job-reclaim": "on" };
    const edited = await walksPage.actions!["preview-edit"]!(ctx);
    expect(calls[0]).toEqual({ method: "PUT", path: "/api/walks/nightly?dryRun=true", body: { schedule: "0 30 5 * * TUE", enabled: true, jobs: ["reclaim"] } });
    expect(edited).toMatchObject({ kind: "html", notice: expect.stringMatching(/^Preview only/) });
    expect(main(edited)).toMatch(/<output id="next-run" for="schedule">Tue 8 Jan 2030, 05:30:00 UTC/);
    expect(main(edited)).toContain('value="0 30 5 * * TUE"');
    expect(calls.filter((c) => c.method !== "GET" && !c.path.includes("dryRun=true"))).toEqual([]);

    ctx.subpath = "";
    ctx.form = { name: "hourly", schedule: "0 61 * * * *", "job-repair": "on" };
    const added = main(await walksPage.actions!["preview-add"]!(ctx));
    expect(calls.find((c) => c.method === "POST")).toEqual({ method: "POST", path: "/api/walks?dryRun=true", body: { name: "hourly", schedule: "0 61 * * * *", enabled: false, jobs: ["repair"] } });
    expect(added).toContain('<output id="new-next-run" for="new-schedule">not valid: &quot;0 61 * * * *&quot; is not a valid schedule: value 61</output>');
    expect(added).toContain('id="new-name" name="name" value="hourly"');
    expect(added).toMatch(/name="job-repair" value="on" checked/);
  });

  it("says which walk is running when walk-now is refused, and lets a missing right through", async () => {
    const busy = context({ "POST /api/walks/run": { status: 409, body: { detail: "the store is being walked already: walk nightly since 03:00" } } });
    expect(await walksPage.actions!["run-now"]!(busy.ctx)).toMatchObject({ notice: expect.stringContaining("walk nightly") });
    const started = context({ "POST /api/walks/run": { status: 202, body: { id: "r9", walk: "rebuild", jobs: ["reclaim", "repair"] } } });
    expect(await walksPage.actions!["run-now"]!(started.ctx)).toMatchObject({ notice: "Walk started: run r9 of walk rebuild with reclaim, repair." });
    const refused = context({ "POST /api/walks/run": forbidden });
    await expect(walksPage.actions!["run-now"]!(refused.ctx)).rejects.toBeInstanceOf(ApiRefusal);
  });
});

describe("Logs page", () => {
  const page = { entries: [{ seq: 1, node: "walker@h", service: "walker", time: "2030-01-01T00:00:00Z", level: "INFO", msg: "walk <ended>", walk: "nightly" }], next: "cur1" };

  it("passes the level, text and service filters to /api/logs and escapes what the entries say", async () => {
    const { ctx, calls } = context({ "GET /api/logs": { body: page } }, { query: { level: "WARN", service: "walker", q: "walk", limit: "bogus" } });
    const o = await logsPage.get(ctx);
    expect(calls[0]!.path).toBe("/api/logs?level=WARN&q=walk&service=walker&limit=100");
    expect(main(o)).toContain("walk &lt;ended&gt;");
    expect(main(o)).toContain('data-next="cur1"');
    expect(main(o)).toContain('<option value="walker" selected>');
    expect(o).toMatchObject({ scripts: ["logs-follow.js"] });
  });

  it("takes the level in any case", async () => {
    for (const level of ["warn", "Warn", " WARN "]) {
      const { ctx, calls } = context({ "GET /api/logs": { body: page } }, { query: { level } });
      const html = main(await logsPage.get(ctx));
      expect(new URLSearchParams(calls[0]!.path.split("?")[1]).get("level"), level).toBe("WARN");
      expect(html, level).toMatch(/<option value="WARN" selected>/);
    }
  });

    it("answers the follow script with the entries after its cursor", async () => {
    const { ctx, calls } = context({ "GET /api/logs": { body: page } }, { query: { format: "json", after: "cur0", service: "walker" } });
    expect(await logsPage.get(ctx)).toEqual({ kind: "json", body: { rows: [expect.objectContaining({ msg: "walk <ended>", fields: '{"walk":"nightly"}' })], next: "cur1" } });
    expect(calls[0]!.path).toContain("after=cur0");
  });
});

describe("Settings page", () => {
  const table = {
    nodes: [{ node: "admin@a", service: "admin" }, { node: "gateway@b", service: "gateway" }],
    settings: [
      { name: "svc.internal-secret", environment: "SVC_INTERNAL_SECRET", description: "shared", secret: true, readBy: ["admin", "gateway"], agree: true, nodes: [{ node: "admin@a", service: "admin", from: "environment", set: true }, { node: "gateway@b", service: "gateway", from: "environment", set: true }] },
      { name: "svc.read-only", environment: "SVC_READ_ONLY", description: "refuse writes", secret: false, readBy: ["admin", "gateway"], agree: false, nodes: [{ node: "admin@a", service: "admin", from: "default", set: true, value: "false" }, { node: "gateway@b", service: "gateway", from: "-D", set: true, value: "true" }] },
    ],
  };

  it("shows each setting's value and origin, secrets only as set, and the settings the nodes disagree on", async () => {
    const { ctx } = context({ "GET /api/settings": { body: table } });
    const html = main(await settingsPage.get(ctx));
    expect(html).toMatch(/<em>set<\/em> <span class="origin">from environment<\/span> <span class="on">on all 2 nodes/);
    expect(html).toContain("<code>gateway@b</code>: <code>true</code> <span class=\"origin\">from -D system property");
    expect(html).toContain("1 setting differs between nodes");
    const only = context({ "GET /api/settings": { body: table } }, { query: { differ: "on" } });
    expect(main(await settingsPage.get(only.ctx))).not.toContain("svc.internal-secret");
  });

  it("marks a setting that differs by nature as per process and does not count it among the settings that differ", async () => {
    const port = { name: "svc.port", environment: "SVC_PORT", description: "port", secret: false, readBy: ["admin", "gateway"], agree: true, perProcess: true, nodes: [{ node: "admin@a", service: "admin", from: "environment", set: true, value: "18083" }, { node: "gateway@b", service: "gateway", from: "environment", set: true, value: "8080" }] };
    const out = main(await settingsPage.get(context({ "GET /api/settings": { body: { ...table, settings: [...table.settings, port] } } }).ctx));
    expect(out).toContain("1 setting differs between nodes");
    expect(out).toMatch(/<tr id="setting-svc.port">.*<span class="per-process">per process<\/span>/s);
  });

  it("renders each setting's description's Markdown, escaped", async () => {
    const row = { ...table.settings[1]!, description: "`true`: **refuse** writes <script>x</script>" };
    const out = main(await settingsPage.get(context({ "GET /api/settings": { body: { ...table, settings: [row] } } }).ctx));
    expect(out).toContain("<td><code>true</code>: <strong>refuse</strong> writes &lt;script&gt;x&lt;/script&gt;</td>");
  });

  const runtimeTable = {
    nodes: [{ node: "admin@a", service: "admin" }],
    settings: [
      { name: "svc.rate-limit", environment: "SVC_RATE_LIMIT", description: "ceiling", secret: false, readBy: ["admin", "gateway"], agree: true, nodes: [{ node: "admin@a", service: "admin", from: "default", set: true, value: "6000" }], runtime: true, value: "40", fixed: false },
      { name: "svc.malware-action", environment: "SVC_MALWARE_ACTION", description: "gate", secret: false, readBy: ["admin"], agree: true, nodes: [{ node: "admin@a", service: "admin", from: "environment", set: true, value: "WARN" }], runtime: true, value: "WARN", fixed: true, fixedAt: "environment SVC_MALWARE_ACTION" },
    ],
  };
  const changes = { changes: [{ id: "3", name: "svc.rate-limit", oldValue: "6000", newValue: "40", principal: "dev/admin", at: "2026-01-02T03:04:05.000Z" }] };

  it("offers a form per run-time setting, shows a fixed one as fixed, and lists the changes", async () => {
    const { ctx, calls } = context({ "GET /api/settings": { body: runtimeTable }, "GET /api/settings/changes": { body: changes } });
    const html = main(await settingsPage.get(ctx));
    expect(html).toMatch(/<tr id="runtime-rate-limit">.*<code>40<\/code>.*<form method="post" action="\/ui\/settings".*name="_csrf" value="tok-123".*name="name" value="rate-limit".*name="value" type="text" value="40"/s);
    expect(html).toMatch(/<tr id="runtime-malware-action">.*<strong>fixed<\/strong> at start \(environment SVC_MALWARE_ACTION\)/s);
    expect(html).not.toMatch(/<tr id="runtime-malware-action">[^\n]*<form/);
    expect(html).toMatch(/id="setting-changes".*<code>svc.rate-limit<\/code>.*<code>6000<\/code>.*<code>40<\/code>.*<code>dev\/admin<\/code>/s);
    expect(calls.map((c) => c.path)).toContain("/api/settings/changes?limit=20");
  });

  it("changes a run-time setting through the API and shows a refusal's reason on the page", async () => {
    const ok = context({ "PUT /api/settings/rate-limit": { body: { name: "svc.rate-limit", value: "50", previous: "40" } } }, { form: { name: "rate-limit", value: "50" } });
    expect(await settingsPage.actions!.set!(ok.ctx)).toEqual({ kind: "redirect", location: "/ui/settings", notice: "rate-limit changed" });
    expect(ok.calls[0]).toEqual({ method: "PUT", path: "/api/settings/rate-limit", body: { value: "50" } });
    const bad = context({ "PUT /api/settings/rate-limit": { status: 400, body: { detail: "svc.rate-limit must be a whole number (0 or more)" } } }, { form: { name: "rate-limit", value: "lots" } });
    expect(await settingsPage.actions!.set!(bad.ctx)).toEqual({ kind: "redirect", location: "/ui/settings", notice: "Not done: svc.rate-limit must be a whole number (0 or more)" });
  });

  it("shows Modules with the Deploy switch, the webhook secret write-only, the endpoint list masked and never sent back, a tenant's override", async () => {
    const row = (name: string, extra: object) => ({ name, environment: "SVC_X", description: "d", secret: false, readBy: ["notifier"], agree: true, nodes: [], runtime: true, fixed: false, ...extra });
    const table = {
      nodes: [{ node: "admin@a", service: "admin" }],
      settings: [
        row("svc.ui.deploy", { value: "false" }),
        row("svc.webhook-endpoints", { value: "https://hooks.example/… none" }),
        row("svc.webhook-secrets", { secret: true, set: true }),
        row("svc.deny-list-action", { value: "BLOCK", tenants: [{ tenant: "default", value: "ALLOW" }] }),
      ],
    };
    const history = { changes: [{ id: "4", name: "svc.deny-list-action", tenant: "default", oldValue: "BLOCK", newValue: "ALLOW", principal: "dev/admin", at: "2026-01-02T03:04:05.000Z" }] };
    const html = main(await settingsPage.get(context({ "GET /api/settings": { body: table }, "GET /api/settings/changes": { body: history } }).ctx));
    expect(html).toMatch(/id="modules".*<tr id="module-deploy">.*<strong>off<\/strong>.*name="name" value="ui.deploy".*name="value" value="true".*Switch on/s);
    expect(html).not.toContain('id="runtime-ui.deploy"');
    expect(html).toMatch(/<tr id="runtime-webhook-secrets">.*<em>set<\/em>.*<textarea id="value-webhook-secrets" name="value"[^>]*><\/textarea>.*write-only/s);
    expect(html).toMatch(/<tr id="runtime-webhook-endpoints">.*<code>https:\/\/hooks.example\/… none<\/code>.*<textarea id="value-webhook-endpoints" name="value"[^>]*><\/textarea>/s);
    expect(html).toMatch(/<tr id="runtime-deny-list-action">.*tenant <code>default<\/code>: <code>ALLOW<\/code>.*name="tenant"/s);
    expect(html).toMatch(/id="setting-changes".*svc.deny-list-action<\/code> for tenant <code>default<\/code>/s);

    const on = context({ "PUT /api/settings/ui.deploy": { body: { name: "svc.ui.deploy", value: "true", previous: "false" } } }, { form: { name: "ui.deploy", value: "true" } });
    expect(await settingsPage.actions!.set!(on.ctx)).toEqual({ kind: "redirect", location: "/ui/settings", notice: "ui.deploy changed" });
    const perTenant = context({ "PUT /api/settings/deny-list-action": { body: { name: "svc.deny-list-action", tenant: "default", value: "ALLOW", previous: "BLOCK" } } }, { form: { name: "deny-list-action", value: "ALLOW", tenant: "default" } });
    expect(await settingsPage.actions!.set!(perTenant.ctx)).toEqual({ kind: "redirect", location: "/ui/settings", notice: "deny-list-action changed for tenant default" });
    expect(perTenant.calls[0]).toEqual({ method: "PUT", path: "/api/settings/deny-list-action?tenant=default", body: { value: "ALLOW" } });
  });
});

describe("Metrics page", () => {
  const exposition = [
    "# HELP svc_walk_running 1 while this process runs the walk",
    "# TYPE svc_walk_running gauge",
    'svc_walk_running{walk="nightly",service="walker",node="walker@h"} 0',
    "# HELP svc_http_request_duration_seconds Request duration",
    "# TYPE svc_http_request_duration_seconds histogram",
    'svc_http_request_duration_seconds_bucket{le="0.1",service="admin",node="admin@h"} 3',
    'svc_http_request_duration_seconds_sum{service="admin",node="admin@h"} 0.25',
    'svc_http_request_duration_seconds_count{service="admin",node="admin@h"} 3',
    "# HELP svc_gateway_key_cache_hits_total Key cache \\\"hits\\\"",
    "# TYPE svc_gateway_key_cache_hits_total counter",
    'svc_gateway_key_cache_hits_total{service="gateway",node="gateway@h"} 12',
    "",
  ].join("\n");

  it("reads the exposition into families with their descriptions", () => {
    const f = parseExposition(exposition);
    expect(f.map((x) => x.name)).toEqual(["svc_walk_running", "svc_http_request_duration_seconds", "svc_gateway_key_cache_hits_total"]);
    expect(f[1]!.samples.map((s) => s.name)).toEqual(["svc_http_request_duration_seconds_bucket", "svc_http_request_duration_seconds_sum", "svc_http_request_duration_seconds_count"]);
    expect(f[2]).toMatchObject({ type: "counter", help: 'Key cache "hits"', samples: [{ labels: { service: "gateway", node: "gateway@h" }, value: 12 }] });
  });

  const series = {
    from: "2026-11-29T12:00:00.000Z",
    to: "2026-11-29T13:00:00.000Z",
    stepSeconds: 60,
    points: [
      { time: "2026-11-29T12:10:00.000Z", requests: 30, errors: 3, latencyMs: 12.5, p95Ms: 40, storageBytes: 2048 },
      { time: "2026-11-29T12:11:00.000Z", requests: 60, errors: 0, latencyMs: 8, p95Ms: 25, storageBytes: 4096 },
    ],
    totals: { requests: 90, errors: 3 },
  };

  it("shows health checks (a 503 included), the charts of the sampled meters, background tasks, and links to the raw table", async () => {
    const { ctx, calls } = context({
      "GET /metrics": { body: exposition },
      "GET /health/ready": { status: 503, body: { status: "down", checks: { redis: { status: "down", error: "connection refused" }, auth: { status: "up" } } } },
      "GET /api/metrics/series": { body: series },
    });
    const html = main(await metricsPage.get(ctx));
    expect(html).toContain("connection refused");
    expect(html).toMatch(/id="background"[\s\S]*svc_walk_running[\s\S]*1 while this process runs the walk/);
    expect(calls.find((c) => c.path.startsWith("/api/metrics/series"))?.path).toBe("/api/metrics/series?window=1h");
    for (const chart of ["metrics-requests", "metrics-errors", "metrics-latency", "metrics-p95", "metrics-storage"]) expect(html).toContain(`<figure class="chart" id="${chart}">`);
    expect(html).toMatch(/Latency, 95th percentile<\/strong> <span id="metrics-p95-summary">Latest 25 ms at 12:11 UTC/);
    expect(html).toContain("Latest 60 at 12:11 UTC");
    expect(html).toContain('<a href="/ui/metrics/raw" id="raw-link">');
    expect(html).not.toContain('id="meters"');
  });

  it("asks for the last day's series when the page is asked for it", async () => {
    const { ctx, calls } = context({ "GET /metrics": { body: exposition }, "GET /health/ready": { body: { status: "up" } }, "GET /api/metrics/series": { body: series } }, { query: { window: "24h" } });
    const html = main(await metricsPage.get(ctx));
    expect(calls.find((c) => c.path.startsWith("/api/metrics/series"))?.path).toBe("/api/metrics/series?window=24h");
    expect(html).toContain('<a href="/ui/metrics?window=1h">the last hour</a>');
  });

  it("shows every meter with value and description in the raw table, filtered by service", async () => {
    const { ctx } = context({ "GET /metrics": { body: exposition } }, { subpath: "/raw" });
    const html = main(await metricsPage.get(ctx));
    expect(html).toMatch(/id="meters"[\s\S]*svc_gateway_key_cache_hits_total[\s\S]*>12</);
    expect(html).toContain("(count)");
    expect(html).not.toContain("(bucket)");
    expect(html).toContain('action="/ui/metrics/raw"');
    const admin = context({ "GET /metrics": { body: exposition } }, { query: { service: "admin" }, subpath: "/raw" });
    const only = main(await metricsPage.get(admin.ctx));
    expect(only).not.toContain("svc_gateway_key_cache_hits_total");
    expect(only).toContain("svc_http_request_duration_seconds");
  });

  it("lets a refusal of /metrics through for the core's 403 page", async () => {
    const { ctx } = context({ "GET /metrics": { status: 403, body: "this key does not hold manage:read on *\n" }, "GET /health/ready": { body: { status: "up" } }, "GET /api/metrics/series": forbidden });
    await expect(metricsPage.get(ctx)).rejects.toMatchObject({ status: 403, detail: "this key does not hold manage:read on *" });
  });
});

describe("a viewer (manage:read only) on the operations pages", () => {
  const viewer: Partial<PageContext> = { may: (right) => right === "manage:read" };
  const posting = /<form method="post"|name="_action"/;

  it("sees the caches but not Clear", async () => {
    const answers = { "GET /api/caches": { body: { node: "gateway@h:1", caches: [] } } };
    expect(main(await cachesPage.get(context(answers, viewer).ctx))).not.toMatch(posting);
    expect(main(await cachesPage.get(context(answers).ctx))).toContain("Clear caches on this node");
  });

  it("sees the walks and a walk's schedule, but no Walk now, Add, Save or Remove", async () => {
    const list = main(await walksPage.get(context({ "GET /api/walks": { body: [walk] } }, viewer).ctx));
    expect(list).toContain('href="/ui/walks/nightly"');
    expect(list).not.toMatch(posting);
    const one = main(await walksPage.get(context({ "GET /api/walks/nightly": { body: walk }, "GET /api/walks/nightly/runs": { body: [] } }, { ...viewer, subpath: "/nightly" }).ctx));
    expect(one).toMatch(/<dl id="walk"><dt>Schedule \(UTC\)<\/dt><dd><code>0 0 3 \* \* \*<\/code>/);
    expect(one).not.toMatch(posting);
  });

  it("sees the settings and their values, but no form to change one or switch a module", async () => {
    const row = (name: string, extra: object) => ({ name, environment: "SVC_X", description: "d", secret: false, readBy: ["gateway"], agree: true, nodes: [], runtime: true, fixed: false, ...extra });
    const table = { nodes: [{ node: "admin@a", service: "admin" }], settings: [row("svc.ui.deploy", { value: "false" }), row("svc.rate-limit", { value: "40" })] };
    const answers = { "GET /api/settings": { body: table }, "GET /api/settings/changes": { body: { changes: [] } } };
    const out = main(await settingsPage.get(context(answers, viewer).ctx));
    expect(out).toContain("<code>40</code>");
    expect(out).not.toMatch(posting);
    expect(main(await settingsPage.get(context(answers).ctx))).toMatch(posting);
  });
});

