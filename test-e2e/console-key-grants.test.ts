// Granting rights to a key in the console, in a real browser (Debian's Chromium through
// playwright-core), signed in through the test OpenID Connect provider: issuing a key leads
// straight to granting it (a repository, a path prefix, rights); the key's page lists and removes
// its grants, changes its expiry and source addresses, and rotates it; a repository's
// "Authorise by the path" is switched on its page and at creation. A person holding manage:read
// only sees the same pages without a form. Screenshots under the test data folder.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, screenshotIn, signInWithTestIdp, type TestBrowser } from "./browser.js";
import { startIdentityProvider, type TestIdentityProvider } from "./oidc-provider.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let idp: TestIdentityProvider;
let browser: TestBrowser;

beforeAll(async () => {
  idp = await startIdentityProvider();
  s = await startSuite({ env: { SVC_PROFILE: "dev", ...idp.consoleEnv() } });
  idp.configure(s.gatewayUrl);
  browser = await launchBrowser();
  const grant = (id: string, tokens: string[]) => s.call("POST", "/api/principals/grants", { key: s.bootstrapKey, body: { id, scope: "*", tokens } });
  expect((await grant("oidc/alice", ["admin"])).status).toBe(200);
  expect((await grant("oidc/bob", ["manage:read"])).status).toBe(200);
});
afterAll(async () => {
  await browser?.context.close();
  await s?.stop();
  await idp?.stop();
});

const signIn = (login: string): Promise<Page> => signInWithTestIdp(browser, s.gatewayUrl, login);

const shot = (page: Page, name: string) => screenshotIn("console-key-grants", page, name);
const notice = (page: Page) => page.locator("p.notice").innerText();
interface Credential {
  expires: string | null;
  allowedAddresses: string[];
  grants: { scope: string; tokens: string[] }[];
}
const credential = async (id: string) => (await (await s.call("GET", `/api/credentials/${id}`, { key: s.bootstrapKey })).json()) as Credential;
const put = (key: string, path: string) => s.call("PUT", `/repository/default/${path}`, { key, headers: { "service-repository-name": "default" }, body: "x" });

let keyPage = "";
let issued = "";

describe("granting a key rights in the console", () => {
  it("issuing a key leads straight to granting it a repository, a path prefix and rights", async () => {
    const page = await signIn("alice");
    await page.goto(`${s.gatewayUrl}/ui/credentials`);
    await page.getByLabel("Label").first().fill("libs deployer");
    await page.getByRole("button", { name: "Issue key" }).click();
    issued = await page.locator("#issued-key").inputValue();
    expect(issued).toMatch(/^svck_default\./);
    expect(await page.locator("#issued-grant h2").innerText()).toBe("Grant it rights");
    await shot(page, "issued-then-grant");
    await page.locator("#issued-grant-scope").fill("default");
    await page.locator("#issued-grant-prefix").fill("libs");
    await page.locator("#issued-grant-tokens").fill("deploy");
    await page.locator("#issued-grant").getByRole("button", { name: "Grant" }).click();
    expect(await notice(page)).toBe("Granted the key rights at default:libs");
    keyPage = new URL(page.url()).pathname;
    expect(keyPage).toMatch(/^\/ui\/credentials\/[0-9a-f]{64}$/);
    expect(await page.locator("#key-grants").innerText()).toContain("default:libs: cache:read, cache:write, repository:read, repository:write");
    await shot(page, "key-page");
    // What the grant allows, and no more: under libs/ only.
    expect((await put(issued, "libs/a.txt")).status).toBe(201);
    expect((await put(issued, "b.txt")).status).toBe(403);
    // The list links each key to its page.
    await page.goto(`${s.gatewayUrl}/ui/credentials`);
    await page.locator("#credentials").getByRole("link", { name: "libs deployer" }).click();
    expect(new URL(page.url()).pathname).toBe(keyPage);
  });

  it("the key's page adds and removes grants, and changes the expiry and the source addresses", async () => {
    const page = await signIn("alice");
    const id = keyPage.split("/").pop()!;
    await page.goto(`${s.gatewayUrl}${keyPage}`);
    await page.locator("#key-grant-scope").fill("default");
    await page.locator("#key-grant-tokens").fill("read-only");
    await page.locator("#key-grants").getByRole("button", { name: "Grant" }).click();
    expect(await notice(page)).toBe("Granted the key rights at default");
    await page.locator("#key-grants li", { hasText: "default:libs" }).getByRole("button", { name: "Remove" }).click();
    expect(await notice(page)).toBe("Removed the key's rights at default:libs");
    expect((await credential(id)).grants.map((g) => g.scope)).toEqual(["default"]);
    expect((await put(issued, "libs/c.txt")).status).toBe(403);

    await page.locator("#key-expires-at").fill("P3D");
    await page.getByRole("button", { name: "Save expiry" }).click();
    expect(await notice(page)).toMatch(/^Expiry set: \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    const expires = Date.parse((await credential(id)).expires!);
    expect(expires).toBeGreaterThan(Date.now() + 2 * 86_400_000);
    expect(expires).toBeLessThan(Date.now() + 4 * 86_400_000);

    await page.locator("#key-allowed").fill("10.9.9.9");
    await page.getByRole("button", { name: "Save addresses" }).click();
    expect(await notice(page)).toBe("Source addresses: 10.9.9.9");
    const elsewhere = await s.call("GET", "/repository/default/libs/a.txt", { key: issued, headers: { "service-repository-name": "default" } });
    expect(elsewhere.status).toBe(403);
    expect(await elsewhere.text()).toContain("may not be used from");
    await page.locator("#key-allowed").fill("");
    await page.getByRole("button", { name: "Save addresses" }).click();
    expect(await notice(page)).toBe("Source addresses: any");
    expect((await s.call("GET", "/repository/default/libs/a.txt", { key: issued, headers: { "service-repository-name": "default" } })).status).toBe(200);
    await shot(page, "key-page-changed");
  });

  it("rotating shows the successor's key once; it holds the same grants and the old key ends", async () => {
    const page = await signIn("alice");
    await page.goto(`${s.gatewayUrl}${keyPage}`);
    await page.locator("#key-overlap").fill("PT0S");
    await page.getByRole("button", { name: "Rotate key" }).click();
    expect(await notice(page)).toBe("Key rotated");
    const successor = await page.locator("#issued-key").inputValue();
    expect(successor).toMatch(/^svck_default\./);
    await shot(page, "rotated");
    expect((await s.call("GET", "/repository/default/libs/a.txt", { key: successor, headers: { "service-repository-name": "default" } })).status).toBe(200);
    expect((await s.call("GET", "/repository/default/libs/a.txt", { key: issued, headers: { "service-repository-name": "default" } })).status).toBe(401);
    const successorPage = (await page.locator("#successor-link").getAttribute("href"))!;
    expect(successorPage).toMatch(/^\/ui\/credentials\/[0-9a-f]{64}$/);
    // The old key's page shows it ended, without forms: an expired key is final.
    await page.goto(`${s.gatewayUrl}${keyPage}`);
    expect(await page.locator("#key-state").innerText()).toBe("expired");
    expect(await page.locator('main input[name="_action"]').count()).toBe(0);
    await page.goto(`${s.gatewayUrl}${successorPage}`);
    expect(await page.locator("#key-grants").innerText()).toContain("default: cache:read, repository:read");
    // From here on, the successor's page (an active key: its forms are there for an administrator).
    keyPage = successorPage;
    expect(await page.locator('#key-grants input[name="_action"][value="grant"]').count()).toBe(1);
  });

  it("a repository is authorised by its path from its page, and at creation", async () => {
    const page = await signIn("alice");
    await page.goto(`${s.gatewayUrl}/ui/repositories/default`);
    expect(await page.locator("#scope-from-path-current").innerText()).toBe("off");
    await page.locator("#scope-from-path-on").check();
    await page.locator("#scope-from-path").getByRole("button", { name: "Save" }).click();
    expect(await notice(page)).toContain("default is authorised by its path");
    expect(await page.locator("#scope-from-path-current").innerText()).toBe("on");
    await shot(page, "repository-scope-from-path");
    const repo = async (name: string) => (await (await s.call("GET", `/api/repositories/${name}`, { key: s.bootstrapKey })).json()) as { scopeFromPath: boolean };
    expect((await repo("default")).scopeFromPath).toBe(true);
    // A key granted on default alone now reads it without the header.
    const reader = await s.mint({ grants: [{ scope: "default", tokens: ["read-only"] }] });
    expect((await s.call("GET", "/repository/default/libs/a.txt", { key: reader.key })).status).toBe(200);

    await page.goto(`${s.gatewayUrl}/ui/repositories`);
    await page.locator("#create-name").fill("team-npm");
    await page.locator("#create-format").selectOption("npm");
    await page.locator("#create-scope-from-path").check();
    await page.getByRole("button", { name: "Create repository" }).click();
    expect(await notice(page)).toContain("Repository team-npm created");
    expect((await repo("team-npm")).scopeFromPath).toBe(true);
  });
});

describe("a person holding manage:read only", () => {
  it("sees a key's page and a repository's option without a form to change them", async () => {
    const page = await signIn("bob");
    for (const path of [keyPage, "/ui/credentials", "/ui/repositories/default"]) {
      expect((await page.goto(`${s.gatewayUrl}${path}`))?.status(), path).toBe(200);
      expect(await page.locator('main form[method="post"], main input[name="_action"]').count(), path).toBe(0);
      const buttons = await page.locator("main button:visible").allInnerTexts();
      expect(buttons.filter((b) => /^(Issue|Revoke|Grant|Remove|Save|Rotate|Create)/.test(b)), path).toEqual([]);
    }
    await page.goto(`${s.gatewayUrl}${keyPage}`);
    expect(await page.locator("#key-state").innerText()).toBe("active");
    expect(await page.locator("#key-grants").innerText()).toContain("default: cache:read, repository:read");
    await shot(page, "viewer-key-page");
    await page.goto(`${s.gatewayUrl}/ui/repositories/default`);
    expect(await page.locator("#scope-from-path-current").innerText()).toBe("on");
  });
});
