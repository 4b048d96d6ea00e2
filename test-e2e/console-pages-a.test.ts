import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, postFromPage, signInDev, type DevAccount, type TestBrowser } from "./browser.js";
import { startSuite, type Suite } from "./suite.js";

/**
 * The operations pages Metrics, Logs, Caches, Walks and Settings in a real browser, signed in
 * through the dev profile's form: each page opened, its main action done once, and a
 * screenshot of each saved for a person to look at. The viewer account (read-only plus
 * manage:read) is refused the changes, on the 403 page naming the missing right.
 */
describe("console operations pages in a browser", () => {
  let s: Suite;
  let b: TestBrowser;
  let page: Page;

  const signIn = async (account: DevAccount): Promise<Page> => signInDev(await b.newPage(), s.gatewayUrl, account);
  const open = async (path: string) => {
    const res = await page.goto(`${s.gatewayUrl}${path}`);
    expect(res?.status(), path).toBe(200);
  };
  const notice = () => page.textContent(".notice");

  beforeAll(async () => {
    s = await startSuite({ env: { SVC_PROFILE: "dev" } });
    b = await launchBrowser();
    page = await signIn("admin");
  });
  afterAll(async () => {
    await b?.close();
    await s?.stop();
  });

  it("Metrics: health checks and background tasks, and behind a link the meters with their descriptions, filtered by service", async () => {
    await open("/ui/metrics");
    expect(await page.locator("nav a[aria-current=page]").textContent()).toBe("Metrics");
    await expect.poll(() => page.locator("#health").count()).toBe(1);
    await Promise.all([page.waitForURL(/\/ui\/metrics\/raw$/), page.click("#raw-link")]);
    // The service filter lists the nodes the admin service has heard a heartbeat from (one every
    // 5 s each; later on a busy machine): the page shown again until the gateway is among them.
    await expect
      .poll(
        async () => {
          await open("/ui/metrics/raw");
          return page.locator("#service option[value=gateway]").count();
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toBe(1);
    await page.selectOption("#service", "gateway");
    await Promise.all([page.waitForURL(/service=gateway/), page.click("form.filters button[type=submit]")]);
    const meters = await page.locator("#meters tbody").textContent();
    expect(meters).toContain("svc_gateway_key_cache");
    expect(meters).not.toContain("service=auth");
    await b.screenshot(page, "console-metrics");
  });

  it("Logs: filtered by service, then following new entries", async () => {
    await open("/ui/logs");
    await page.selectOption("#service", "walker");
    await Promise.all([page.waitForURL(/service=walker/), page.click("form.filters button[type=submit]")]);
    const services = await page.locator("#log-entries tbody tr td:nth-child(3)").allTextContents();
    expect(services.length).toBeGreaterThan(0);
    expect(new Set(services)).toEqual(new Set(["walker"]));
    await page.check("#follow");
    await expect.poll(() => page.textContent("#follow-state"), { timeout: 10_000 }).toMatch(/^Following/);
    // A new walker entry (a walk added through the API) arrives without reloading.
    const before = await page.locator("#log-entries tbody tr").count();
    const res = await s.call("POST", "/api/walks", { key: s.bootstrapKey, body: { name: "followed", schedule: "0 0 3 * * *", jobs: ["reclaim"] } });
    expect(res.status).toBe(201);
    await expect.poll(() => page.locator("#log-entries tbody tr").count(), { timeout: 15_000 }).toBeGreaterThan(before);
    await b.screenshot(page, "console-logs");
  });

  it("Caches: each read cache with time to live, hits and size; Clear caches on this node", async () => {
    await open("/ui/caches");
    expect(await page.locator("#caches tbody tr").count()).toBeGreaterThan(0);
    await Promise.all([page.waitForURL(/\/ui\/caches$/), page.click("#clear-caches")]);
    expect(await notice()).toMatch(/^Caches cleared on node /);
    await b.screenshot(page, "console-caches");
  });

  it("Walks: add, edit with the next run shown, walk the store now, each run's record, remove", async () => {
    await open("/ui/walks");
    await page.fill("#new-name", "nightly");
    await page.fill("#new-schedule", "0 0 3 * * *");
    await page.check("input[name=job-reclaim]");
    await Promise.all([page.waitForURL(/\/ui\/walks\/nightly$/), page.click("#add-walk button[type=submit]")]);
    expect(await notice()).toMatch(/^Walk nightly added; next run \w{3} \d+ \w{3} \d{4}, 03:00:00 UTC/);

    await page.fill("#schedule", "0 15 4 * * MON");
    await page.check("#edit-walk input[name=job-repair]");
    await Promise.all([page.waitForURL(/\/ui\/walks\/nightly$/), page.click("#edit-walk button[type=submit]")]);
    expect(await notice()).toMatch(/^Walk nightly saved; next run Mon \d+ \w{3} \d{4}, 04:15:00 UTC/);
    expect(await page.textContent("#next-run")).toMatch(/^Mon .* 04:15:00 UTC \(in /);

    await open("/ui/walks");
    await Promise.all([page.waitForURL(/\/ui\/walks$/), page.click("#walk-now")]);
    expect(await notice()).toMatch(/^Walk started: run \S+ of walk rebuild|^Not started: the store is being walked already/);
    await open("/ui/walks/rebuild");
    await expect.poll(async () => (await page.reload(), page.locator("#runs tbody tr").count()), { timeout: 15_000 }).toBeGreaterThan(0);
    await b.screenshot(page, "console-walks-runs");

    await open("/ui/walks/nightly");
    await Promise.all([page.waitForURL(/\/ui\/walks$/), page.click("#remove-walk")]);
    expect(await notice()).toBe("Walk nightly removed.");
    expect(await page.locator("#walks a[href='/ui/walks/nightly']").count()).toBe(0);
    await b.screenshot(page, "console-walks");
  });

  it("Walks: the next run previewed from the typed schedule before saving, on adding and on editing; a preview saves nothing", async () => {
    const walk = async (name: string) => s.call("GET", `/api/walks/${name}`, { key: s.bootstrapKey });
    const submit = (selector: string) => Promise.all([page.waitForNavigation(), page.click(selector)]);

    await open("/ui/walks");
    await page.fill("#new-name", "weekly");
    await page.fill("#new-schedule", "0 30 5 * * TUE");
    await page.check("#add-walk input[name=job-reclaim]");
    await submit("#preview-new-walk");
    expect(await page.textContent("#new-next-run")).toMatch(/^Tue \d+ \w{3} \d{4}, 05:30:00 UTC \(in /);
    expect(await notice()).toMatch(/^Preview only/);
    // What was typed is still there, so the save that follows sends it.
    expect(await page.inputValue("#new-name")).toBe("weekly");
    expect(await page.inputValue("#new-schedule")).toBe("0 30 5 * * TUE");
    expect(await page.isChecked("#add-walk input[name=job-reclaim]")).toBe(true);
    expect((await walk("weekly")).status).toBe(404);
    await Promise.all([page.waitForURL(/\/ui\/walks\/weekly$/), page.click("#add-walk button[value=add]")]);
    expect(await notice()).toMatch(/^Walk weekly added; next run Tue /);

    await page.fill("#schedule", "0 45 6 1 * *");
    await submit("#preview-walk");
    expect(await page.textContent("#next-run")).toMatch(/^\w{3} 1 \w{3} \d{4}, 06:45:00 UTC \(in /);
    expect(await page.inputValue("#schedule")).toBe("0 45 6 1 * *");
    await b.screenshot(page, "console-walks-preview");
    expect(((await (await walk("weekly")).json()) as { schedule: string }).schedule).toBe("0 30 5 * * TUE");

    await page.fill("#schedule", "0 61 * * * *");
    await submit("#preview-walk");
    expect(await page.textContent("#next-run")).toMatch(/^not valid: "0 61 \* \* \* \*" is not a valid schedule/);
    expect(((await (await walk("weekly")).json()) as { schedule: string }).schedule).toBe("0 30 5 * * TUE");

    expect((await s.call("DELETE", "/api/walks/weekly", { key: s.bootstrapKey })).status).toBe(204);
  });

  it("Settings: each setting with its value and where it came from, secrets only as set", async () => {
    await open("/ui/settings?q=svc.profile");
    const profile = await page.locator("[id='setting-svc.profile']").textContent();
    expect(profile).toContain("dev");
    expect(profile).toContain("from environment");
    await open("/ui/settings?q=svc.internal-secret");
    const secret = await page.locator("[id='setting-svc.internal-secret']").textContent();
    expect(secret).toContain("set");
    expect(await page.content()).not.toContain(s.internalSecret);
    await open("/ui/settings");
    await b.screenshot(page, "console-settings");
  });

  it("Settings: an administrator changes a run-time setting in its form; a bad value is refused on the page; the change is listed", async () => {
    await open("/ui/settings");
    expect(await page.textContent("#runtime-vulnerability-threshold")).toContain("HIGH");
    await page.fill("#value-vulnerability-threshold", "SOMETIMES");
    await Promise.all([page.waitForURL(/\/ui\/settings$/), page.click("#runtime-vulnerability-threshold button[type=submit]")]);
    expect(await notice()).toMatch(/^Not done: svc.vulnerability-threshold must be one of CRITICAL, HIGH, MEDIUM, LOW, NONE/);
    expect(await page.textContent("#runtime-vulnerability-threshold")).toContain("HIGH");
    await page.fill("#value-vulnerability-threshold", "low");
    await Promise.all([page.waitForURL(/\/ui\/settings$/), page.click("#runtime-vulnerability-threshold button[type=submit]")]);
    expect(await notice()).toBe("vulnerability-threshold changed");
    expect(await page.textContent("#runtime-vulnerability-threshold")).toContain("LOW");
    const history = await page.textContent("#setting-changes");
    expect(history).toContain("svc.vulnerability-threshold");
    expect(history).toMatch(/HIGH\s*LOW\s*dev\/admin/);
  });

  it("a viewer reads the pages but is offered no Clear or walk form; posted anyway, they get the 403 page naming the right", async () => {
    const viewer = await signIn("viewer");
    try {
      for (const path of ["/ui/metrics", "/ui/logs", "/ui/caches", "/ui/walks", "/ui/settings"]) {
        expect((await viewer.goto(`${s.gatewayUrl}${path}`))?.status(), path).toBe(200);
        expect(await viewer.locator('form[method="post"]:not(.signout)').count(), path).toBe(0);
      }
      await viewer.goto(`${s.gatewayUrl}/ui/walks`);
      const post = (path: string, fields: Record<string, string>) => postFromPage(viewer, path, fields);
      const refused = await post("/ui/caches", { _action: "clear" });
      expect(refused.status).toBe(403);
      expect(refused.text).toContain("manage:write");
      const walkRefused = await post("/ui/walks", { _action: "add", name: "forbidden", schedule: "0 0 3 * * *", "job-reclaim": "on", enabled: "on" });
      expect(walkRefused.status).toBe(403);
      expect(walkRefused.text).toContain("manage:write");
      await b.screenshot(viewer, "console-walks-viewer");
      expect((await s.call("GET", "/api/walks/forbidden", { key: s.bootstrapKey })).status).toBe(404);
    } finally {
      await viewer.close();
    }
  });
});
