// Creating, reshaping and removing repositories on the console's Repositories page in a real
// browser (Debian's Chromium through playwright-core), signed in with the dev profile's admin:
// a hosted, a proxy (with credentials never shown again) and a group created through the form and
// listed with their type, upstream and members; a refused creation shown with the API's reason;
// a group's members reordered; a member removed past the API's safeguard. Screenshots under the
// test data folder.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, screenshotIn, signInDev } from "./browser.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let browser: Browser;
let page: Page;
const shot = (name: string) => screenshotIn("console-repositories", page, name);
const UPSTREAM = "http://127.0.0.1:9/";
const TOKEN = "upstream-token-s3cret";

beforeAll(async () => {
  s = await startSuite({ env: { SVC_PROFILE: "dev" } });
  browser = await launchChromium();
  page = await signInDev(await (await browser.newContext({ baseURL: s.gatewayUrl })).newPage(), s.gatewayUrl, "admin");
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

const notice = () => page.locator("p.notice").innerText();
const api = async (path: string) => (await s.call("GET", path, { key: s.bootstrapKey })).json() as Promise<Record<string, unknown>>;
/** The Create form filled as a person would; members by their "Member n" selects. */
async function fillCreate(f: { name: string; format: string; type: "Hosted" | "Proxy" | "Group"; url?: string; token?: string; members?: string[] }) {
  await page.getByLabel("Name", { exact: true }).fill(f.name);
  await page.getByLabel("Format").selectOption(f.format);
  await page.getByRole("radio", { name: f.type }).check();
  if (f.url !== undefined) await page.getByLabel("Upstream URL").fill(f.url);
  if (f.token !== undefined) await page.getByLabel("Upstream token").fill(f.token);
  for (const [i, m] of (f.members ?? []).entries()) await page.getByLabel(`Member ${i + 1}`, { exact: true }).selectOption(m);
}
const create = () => page.getByRole("button", { name: "Create repository" }).click();

describe("Repositories in the console", () => {
  it("creates a hosted, a proxy and a group repository from the form and lists each with its type, upstream and members; a refused creation says why and keeps what was typed", async () => {
    await page.goto("/ui/repositories");
    // The formats the server has, as GET /api/formats lists them.
    expect(await page.getByLabel("Format").locator("option").allInnerTexts()).toEqual(["raw (files)", "npm", "maven (the Maven 2 layout)", "pypi (a package index)", "go (Go modules, a GOPROXY)", "cargo (a sparse registry)", "oci (container images, at /v2/)"]);

    await fillCreate({ name: "team-npm", format: "npm", type: "Hosted" });
    await create();
    await page.waitForURL("**/ui/repositories/team-npm");
    expect(await notice()).toBe("Repository team-npm created (hosted, npm)");
    expect(await page.locator("#repository-type").innerText()).toBe("hosted");

    // A plain-http loopback upstream is refused while svc.block-private-import-hosts is on (the default).
    await page.goto("/ui/repositories");
    await fillCreate({ name: "npmjs", format: "npm", type: "Proxy", url: UPSTREAM, token: TOKEN });
    await create();
    const problem = page.locator("#create-problem");
    expect(await problem.innerText()).toMatch(/^Not created: .*block-private-import-hosts/);
    expect(await page.getByLabel("Name", { exact: true }).inputValue()).toBe("npmjs");
    expect(await page.getByLabel("Upstream URL").inputValue()).toBe(UPSTREAM);
    expect(await page.getByRole("radio", { name: "Proxy" }).isChecked()).toBe(true);
    expect(await page.getByLabel("Upstream token").inputValue()).toBe("");
    expect(await page.content()).not.toContain(TOKEN);
    await shot("create-refused");
    expect((await s.call("GET", "/api/repositories/npmjs", { key: s.bootstrapKey })).status).toBe(404);

    expect((await s.call("PUT", "/api/settings/block-private-import-hosts", { key: s.bootstrapKey, body: { value: false } })).status).toBe(200);
    // Every artifacts node applies the change within moments: the person sends the form again until it is taken.
    await expect
      .poll(
        async () => {
          await page.getByLabel("Upstream token").fill(TOKEN);
          await create();
          await page.waitForLoadState();
          return new URL(page.url()).pathname;
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe("/ui/repositories/npmjs");
    expect(await notice()).toBe("Repository npmjs created (proxy, npm)");
    expect(await page.locator("#repository-upstream").innerText()).toBe(UPSTREAM);
    expect(await page.content()).not.toContain(TOKEN);
    expect(await api("/api/repositories/npmjs")).toMatchObject({ type: "proxy", upstream: { url: UPSTREAM } });

    await page.goto("/ui/repositories");
    await fillCreate({ name: "npm-all", format: "npm", type: "Group", members: ["team-npm", "npmjs"] });
    await create();
    await page.waitForURL("**/ui/repositories/npm-all");
    expect(await notice()).toBe("Repository npm-all created (group, npm)");
    expect(await page.locator("#repository-members li").allInnerTexts()).toEqual(["team-npm", "npmjs"]);

    await page.goto("/ui/repositories");
    // A row by its first cell (a group's row links its members too).
    const row = (name: string) => page.locator(`#repositories tbody tr:has(> td:first-child > a[href="/ui/repositories/${name}"])`);
    expect(await row("team-npm").locator("td").allInnerTexts()).toEqual(["team-npm", "npm", "hosted", "", "keep everything", "0 bytes (no quota)", "Export team-npm…"]);
    expect(await row("npmjs").locator("td").allInnerTexts()).toEqual(["npmjs", "npm", "proxy", UPSTREAM, "keep everything", "0 bytes (no quota)", "Export npmjs…"]);
    const group = row("npm-all");
    expect(await group.locator("td").nth(2).innerText()).toBe("group");
    expect(await group.locator("td").nth(3).getByRole("link").allInnerTexts()).toEqual(["team-npm", "npmjs"]);
    expect(await page.content()).not.toContain(TOKEN);
    await shot("repositories-listed");

    // A member's link leads to its page.
    await group.locator("td").nth(3).getByRole("link", { name: "npmjs" }).click();
    await page.waitForURL("**/ui/repositories/npmjs");
  });

  it("reorders a group's members and removes a member only past the API's safeguard", async () => {
    await page.goto("/ui/repositories/npm-all");
    await page.getByLabel("Member 1", { exact: true }).selectOption("npmjs");
    await page.getByLabel("Member 2", { exact: true }).selectOption("team-npm");
    await page.getByRole("button", { name: "Save members" }).click();
    await page.waitForURL("**/ui/repositories/npm-all");
    expect(await page.locator("#repository-members li").allInnerTexts()).toEqual(["npmjs", "team-npm"]);
    expect(await api("/api/repositories/npm-all")).toMatchObject({ members: ["npmjs", "team-npm"] });

    await page.goto("/ui/repositories/team-npm");
    await page.getByLabel("Type the repository's name to confirm").fill("team-npm");
    await page.getByRole("button", { name: "Remove team-npm" }).click();
    await page.waitForURL("**/ui/repositories/team-npm");
    // The API's 409 names the group; the force choice is there because a group names it.
    expect(await notice()).toMatch(/^Not done: .*npm-all/);
    await shot("remove-refused");
    await page.getByLabel("Type the repository's name to confirm").fill("team-npm");
    await page.getByRole("checkbox", { name: /take it out of npm-all/ }).check();
    await page.getByRole("button", { name: "Remove team-npm" }).click();
    await page.waitForURL(/\/ui\/repositories$/);
    expect(await notice()).toBe("Repository team-npm removed");
    expect(await api("/api/repositories/npm-all")).toMatchObject({ members: ["npmjs"] });
    expect((await s.call("GET", "/api/repositories/team-npm", { key: s.bootstrapKey })).status).toBe(404);
  });
});
