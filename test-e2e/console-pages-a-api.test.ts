import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logsPage } from "../services/console/src/pages/logs-page.js";
import { metricsPage } from "../services/console/src/pages/metrics-page.js";
import { ApiRefusal, type PageContext, type PageOutcome } from "../services/console/src/pages/page-contract.js";
import { settingsPage } from "../services/console/src/pages/settings-page.js";
import { walksPage } from "../services/console/src/pages/walks-page.js";
import { startSuite, type Suite } from "./suite.js";

/**
 * The operations pages over the real API through the gateway, called as the console's core
 * calls them but with a key instead of a session (the browser test, console-pages-a.test.ts,
 * covers the same pages signed in): the pages must understand what the services really answer.
 */
describe("console pages Metrics, Logs, Walks and Settings over the real API", () => {
  let s: Suite;
  let admin: { key: string };
  let reader: { key: string };

  const context = (key: string, over: Partial<PageContext> = {}): PageContext => ({
    person: { id: "dev/admin", tenant: "default" },
    async api(method, path, body) {
      const res = await s.call(method, path, { key, body: body as object | undefined });
      const text = await res.text();
      const json = /json/.test(res.headers.get("content-type") ?? "") && text !== "";
      return { status: res.status, body: json ? JSON.parse(text) : text, headers: Object.fromEntries(res.headers) };
    },
    subpath: "",
    query: {},
    form: {},
    csrf: "unused",
    // The forms shown do not matter here: the API decides with the key.
    may: () => true,
    options: { deployEnabled: false, publicBaseUrl: "" },
    ...over,
  });
  const main = (o: PageOutcome) => (o.kind === "html" ? o.main.text : JSON.stringify(o));

  beforeAll(async () => {
    s = await startSuite();
    admin = await s.mint({ grants: [{ scope: "*", tokens: ["manage:read", "manage:write"] }] });
    reader = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
  });
  afterAll(() => s?.stop());

  it("Walks: add, edit (a bad schedule refused as the notice), walk the store now, remove; each run's record", async () => {
    const add = await walksPage.actions!.add!(context(admin.key, { form: { name: "nightly", schedule: "0 0 3 * * *", enabled: "on", "job-reclaim": "on" } }));
    expect(add).toMatchObject({ kind: "redirect", location: "/ui/walks/nightly", notice: expect.stringMatching(/^Walk nightly added; next run \w{3} \d+ \w{3} \d{4}, 03:00:00 UTC/) });
    const edit = await walksPage.actions!.edit!(context(admin.key, { form: { walk: "nightly", schedule: "0 30 4 * * *", "job-repair": "on" } }));
    expect(edit).toMatchObject({ notice: "Walk nightly saved; next run none." });
    const bad = await walksPage.actions!.edit!(context(admin.key, { form: { walk: "nightly", schedule: "0 30 4 * *", "job-repair": "on" } }));
    expect(bad).toMatchObject({ notice: expect.stringContaining("six fields") });
    const page = main(await walksPage.get(context(admin.key, { subpath: "/nightly" })));
    expect(page).toContain('value="0 30 4 * * *"');
    expect(page).toContain("none: the walk is switched off");

    const now = await walksPage.actions!["run-now"]!(context(admin.key));
    expect(now).toMatchObject({ notice: expect.stringMatching(/^Walk started: run \S+ of walk rebuild with /) });
    const list = main(await walksPage.get(context(admin.key)));
    expect(list).toContain('href="/ui/walks/nightly"');
    expect(list).toContain('href="/ui/walks/rebuild"');
    const rebuild = main(await walksPage.get(context(admin.key, { subpath: "/rebuild" })));
    expect(rebuild).toMatch(/id="run-[^"]+"/);

    expect(await walksPage.actions!.remove!(context(admin.key, { form: { walk: "nightly" } }))).toMatchObject({ notice: "Walk nightly removed." });
    expect(main(await walksPage.get(context(admin.key)))).not.toContain('href="/ui/walks/nightly"');
  });

  it("Logs: the service filter reaches /api/logs, and the follow answer carries a cursor", async () => {
    // The page gathers every process's lines over NATS; on a busy machine the walker may answer
    // too late for one gathering (its lines are then missing from it), so ask until they are there.
    let html = "";
    for (const end = Date.now() + 30_000; Date.now() < end && !/<td>walker<\/td>/.test(html); await new Promise((r) => setTimeout(r, 500))) {
      html = main(await logsPage.get(context(admin.key, { query: { service: "walker" } })));
    }
    expect(html).toMatch(/<td>walker<\/td>/);
    expect(html).not.toMatch(/<td>(gateway|auth|artifacts|admin|notifier)<\/td>/);
    const follow = await logsPage.get(context(admin.key, { query: { service: "walker", format: "json" } }));
    expect(follow).toMatchObject({ kind: "json", body: { next: expect.any(String) } });
  });

  it("Settings: each setting with its value and origin, secrets as set", async () => {
    const html = main(await settingsPage.get(context(admin.key, { query: { q: "svc.internal-secret" } })));
    expect(html).toMatch(/<em>set<\/em> <span class="origin">from environment<\/span>/);
    expect(html).not.toContain(s.internalSecret);
  });

  it("Metrics: the health checks and the sampled series' charts, and the meters with their descriptions in the raw table", async () => {
    const html = main(await metricsPage.get(context(admin.key)));
    expect(html).toMatch(/id="health"/);
    expect(html).toContain('<figure class="chart" id="metrics-requests">');
    const raw = main(await metricsPage.get(context(admin.key, { subpath: "/raw", query: { q: "requests_total" } })));
    expect(raw).toMatch(/<code>svc_http_requests_total<\/code>[\s\S]*HTTP requests answered, by route pattern/);
  });

  it("every page refuses a key without manage:read with the gateway's reason", async () => {
    for (const p of [walksPage, logsPage, settingsPage, metricsPage]) {
      const err = await p.get(context(reader.key)).catch((e: unknown) => e);
      expect(err, p.slug).toBeInstanceOf(ApiRefusal);
      expect((err as ApiRefusal).status).toBe(403);
      expect((err as ApiRefusal).detail).toContain("manage:read");
    }
  });
});
