// Export on the console's Repositories page in a real browser (Debian's Chromium through
// playwright-core), signed in with the dev profile's admin: the form post, then the export's
// progress and result; a screenshot of each under the test data folder.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, postFromPage, screenshotIn, signInDev } from "./browser.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let browser: Browser;
let page: Page;
const shot = (name: string) => screenshotIn("console-export", page, name);

beforeAll(async () => {
  s = await startSuite({ env: { SVC_PROFILE: "dev" } });
  browser = await launchChromium();
  page = await signInDev(await (await browser.newContext({ baseURL: s.gatewayUrl })).newPage(), s.gatewayUrl, "admin");
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

describe("Export on the Repositories page", () => {
  it("exports a repository into another of its format from the browser and shows the result, refusals listed", async () => {
    const key = s.bootstrapKey;
    for (const [name, format] of [["site", "raw"], ["site-copy", "raw"], ["js", "npm"]] as const) {
      await s.createRepository(name, format);
    }
    for (const p of ["a.txt", "b.txt", "c.txt"]) expect((await s.call("PUT", `/repository/site/${p}`, { key, body: p })).status).toBe(201);
    expect((await s.call("PUT", "/repository/site-copy/c.txt", { key, body: "changed" })).status).toBe(201);

    await page.goto("/ui/repositories");
    await page.getByRole("link", { name: "Export site…" }).click();
    await page.waitForURL("**/ui/repositories/site#export");
    const target = page.getByLabel("Target repository");
    // Only the other repositories of the same format are offered (default is raw too).
    expect(await target.locator("option").allInnerTexts()).toEqual(["default", "site-copy"]);
    await target.selectOption("site-copy");
    await shot("repository-export-form");
    await page.getByRole("button", { name: "Export", exact: true }).click();
    await page.waitForURL(/\/ui\/repositories\/site\/exports\/[0-9a-f-]{36}$/);
    expect(await page.locator("p.notice").innerText()).toBe("Export of site into site-copy started");
    // The view reloads itself while the export runs.
    await page.locator('#export-state[data-state="done"]').waitFor({ timeout: 60_000 });
    expect(await page.locator("#export-counts tbody").innerText()).toMatch(/^2\s+0\s+1\s/);
    expect(await page.locator("#export-refusals").innerText()).toMatch(/c\.txt\s+the target holds different content at this path/);
    await shot("repository-export-result");
    expect(await (await s.call("GET", "/repository/site-copy/a.txt", { key })).text()).toBe("a.txt");

    await page.getByRole("button", { name: "Export again" }).click();
    await page.locator('#export-state[data-state="done"]').waitFor({ timeout: 60_000 });
    expect(await page.locator("#export-counts tbody").innerText()).toMatch(/^0\s+2\s+1\s/);
  });

  it("offers the viewer no Export, and shows the 403 page naming the right when one is posted anyway", async () => {
    const viewer = await (await browser.newContext({ baseURL: s.gatewayUrl })).newPage();
    await signInDev(viewer, s.gatewayUrl, "viewer");
    await viewer.goto("/ui/repositories/site");
    expect(await viewer.getByRole("button", { name: "Export", exact: true }).count()).toBe(0);
    const refused = await postFromPage(viewer, "/ui/repositories/site", { _action: "export", target: "site-copy" });
    expect(refused.status).toBe(403);
    expect(refused.text).toMatch(/manage:write/);
    expect((await s.call("GET", "/api/repositories/site/exports", { key: s.bootstrapKey }).then((r) => r.json())) as unknown[]).toHaveLength(2);
  });
});
