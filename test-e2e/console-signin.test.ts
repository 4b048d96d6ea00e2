import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { startSuite, type Suite } from "./suite.js";
import { ODD_OAUTH_IDS, ODD_SUBJECTS, startIdentityProvider, TEST_USERS, type TestIdentityProvider } from "./oidc-provider.js";
import { launchBrowser, signInDev as signInDevOn, submitDevSignIn, type DevAccount, type TestBrowser } from "./browser.js";

/**
 * Signing in to the console through the gateway, in Debian's Chromium: a real OpenID Connect
 * provider (and the same provider as an OAuth app), the dev profile's accounts, what a person
 * sees as their rights change, sign-out, and the error page of an unexpected failure.
 */
let suite: Suite;
let idp: TestIdentityProvider;
let browser: TestBrowser;

beforeAll(async () => {
  idp = await startIdentityProvider();
  suite = await startSuite({ env: { SVC_PROFILE: "dev", ...idp.consoleEnv() } });
  idp.configure(suite.gatewayUrl);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await suite?.stop();
  await idp?.stop();
});

const alice = `oidc/${TEST_USERS.alice!.sub}`;

/** Signs in at the test provider's own form (any password for a known user) and consents. */
async function atProvider(page: Page, login: string) {
  await submitAtProvider(page, login);
  await page.waitForURL(`${suite.gatewayUrl}/ui/`);
}

/** The provider's form and consent, waiting for nothing after. */
async function submitAtProvider(page: Page, login: string) {
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
}

async function signInWithProvider(button: string, login: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${suite.gatewayUrl}/`);
  await page.waitForURL(`${suite.gatewayUrl}/login`);
  await page.getByRole("link", { name: button }).click();
  await atProvider(page, login);
  return page;
}

const signInDev = async (account: DevAccount): Promise<Page> => signInDevOn(await browser.newPage(), suite.gatewayUrl, account);

const grant = (id: string, tokens: string[]) => suite.call("POST", "/api/principals/grants", { key: suite.bootstrapKey, body: { id, scope: "*", tokens } });

describe("console sign-in", () => {
  it("a person signed in through the OpenID Connect provider and holding nothing sees the no-access screen with their id; granted, the next load shows their pages", async () => {
    const page = await signInWithProvider("Sign in with Test IdP", "alice");
    await expect.poll(() => page.locator("#person-id").textContent()).toBe(alice);
    await expect.poll(() => page.locator("h1").textContent()).toBe("No access yet");
    await expect.poll(() => page.getByRole("button", { name: "Copy id" }).count()).toBe(1);
    // No navigation to pages they cannot open.
    expect(await page.locator('nav[aria-label="Console pages"]').count()).toBe(0);
    await browser.screenshot(page, "no-access");

    expect((await grant(alice, ["read-only", "manage:read"])).status).toBe(200);
    await page.reload();
    await expect.poll(() => page.locator("h1").textContent()).toBe("Home");
    await expect.poll(() => page.locator("#signed-in-id").textContent()).toBe(alice);
    await expect.poll(() => page.locator("#your-rights").textContent()).toContain("manage:read");
    expect(await page.locator('nav[aria-label="Console pages"] a').count()).toBeGreaterThan(0);
    await browser.screenshot(page, "home");
    // The header links the advisory count (the dev profile raises one at least) to the posture page.
    await page.getByRole("link", { name: /security advisor/ }).click();
    await page.waitForURL(`${suite.gatewayUrl}/ui/posture`);
    await expect.poll(() => page.locator("main").textContent()).toContain("svc.profile.dev");
    expect(browser.offMachine.filter((u) => u.startsWith(suite.gatewayUrl))).toEqual([]);
  });

  it("a person signed in through the OAuth provider app is oauth/<id>", async () => {
    const page = await signInWithProvider("Sign in with OAuth provider", "bob");
    await expect.poll(() => page.locator("#person-id").textContent()).toBe(`oauth/${TEST_USERS.bob!.sub}`);
  });

  it("a provider id the API refuses (trailing space, bidi control, NUL, 5,000 characters, empty) signs nobody in: a 400 page saying why", async () => {
    const cases = [
      ...ODD_SUBJECTS.map((login) => ["Sign in with Test IdP", login] as const),
      ...ODD_SUBJECTS.map((login) => ["Sign in with OAuth provider", login] as const),
      ...Object.keys(ODD_OAUTH_IDS).map((login) => ["Sign in with OAuth provider", login] as const),
    ];
    for (const [button, login] of cases) {
      const what = `${button}, login ${JSON.stringify(login.slice(0, 20))} (${login.length} characters)`;
      const page = await browser.newPage();
      await page.goto(`${suite.gatewayUrl}/login`);
      await page.getByRole("link", { name: button }).click();
      const callback = page.waitForResponse((r) => r.url().startsWith(`${suite.gatewayUrl}/login/oauth2/code/`));
      await submitAtProvider(page, login);
      expect((await callback).status(), what).toBe(400);
      await expect.poll(() => page.locator("h1").textContent(), { message: what }).toBe("Sign-in not accepted");
      expect(await page.locator("main .problem").textContent(), what).toContain("cannot use");
      expect((await browser.context.cookies()).some((c) => c.name === "svc_session"), what).toBe(false);
    }
    // Nine round trips through the provider's pages: slow on a busy machine, and no timing asserted.
  }, 600_000);

  it("the dev profile's admin and viewer accounts sign in with their own rights", async () => {
    const admin = await signInDev("admin");
    await expect.poll(() => admin.locator("#signed-in-id").textContent()).toBe("dev/admin");
    await expect.poll(() => admin.locator("#your-rights").textContent()).toContain("*");
    const viewer = await signInDev("viewer");
    await expect.poll(() => viewer.locator("#signed-in-id").textContent()).toBe("dev/viewer");
    const rights = await viewer.locator("#your-rights").textContent();
    expect(rights).toContain("manage:read");
    expect(rights).not.toContain("manage:write");
  });

  it("a wrong dev password signs nobody in", async () => {
    const page = await browser.newPage();
    await submitDevSignIn(page, suite.gatewayUrl, "admin", "viewer");
    await expect.poll(() => page.locator(".problem").textContent()).toContain("wrong password");
    expect((await browser.context.cookies()).some((c) => c.name === "svc_session")).toBe(false);
  });

  it("every page of the navigation opens for the dev administrator (screenshots in .data/screenshots)", async () => {
    const page = await signInDev("admin");
    const links = await page.locator('nav[aria-label="Console pages"] a').evaluateAll((as) => as.map((a) => [a.textContent ?? "", a.getAttribute("href") ?? ""] as const));
    expect(links.length).toBeGreaterThan(0);
    for (const [name, href] of links) {
      const res = await page.goto(`${suite.gatewayUrl}${href}`);
      expect(res?.status(), `${name} (${href})`).toBe(200);
      await browser.screenshot(page, `page-${href.split("/").pop()}`);
    }
  });

  it("a revoked grant refuses the next page load, naming the missing right", async () => {
    const page = await signInWithProvider("Sign in with Test IdP", "alice");
    expect((await grant(alice, ["read-only", "manage:read"])).status).toBe(200);
    await page.goto(`${suite.gatewayUrl}/ui/posture`);
    await expect.poll(() => page.locator("h1").textContent()).toBe("Security posture");
    const revoke = await suite.call("DELETE", `/api/principals/grants?id=${encodeURIComponent(alice)}&scope=*`, { key: suite.bootstrapKey });
    expect(revoke.status).toBe(204);
    const res = await page.goto(`${suite.gatewayUrl}/ui/posture`);
    expect(res?.status()).toBe(403);
    await expect.poll(() => page.locator("main").textContent()).toContain("manage:read");
    await browser.screenshot(page, "forbidden");
  });

  it("signing out ends the session: the old cookie is refused by the gateway and the console", async () => {
    const page = await signInDev("admin");
    const cookie = (await browser.context.cookies()).find((c) => c.name === "svc_session")!;
    const asBrowser = { headers: { cookie: `svc_session=${cookie.value}` } };
    expect((await suite.call("GET", "/api/me", asBrowser)).status).toBe(200);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${suite.gatewayUrl}/login`);
    await expect.poll(async () => (await suite.call("GET", "/api/me", asBrowser)).status, { timeout: 5_000 }).toBe(401);
    const ui = await fetch(`${suite.gatewayUrl}/ui/`, { headers: { ...asBrowser.headers, accept: "text/html" }, redirect: "manual" });
    expect(ui.headers.get("location")).toBe("/login");
  });

  it("an unexpected failure shows the error page with the reference the log has", async () => {
    const page = await signInDev("admin");
    await suite.stopService("admin");
    try {
      const res = await page.goto(`${suite.gatewayUrl}/ui/posture`);
      expect(res?.status()).toBe(500);
      const reference = (await page.locator("#failure-reference").textContent()) ?? "";
      expect(reference).toMatch(/^[A-Za-z0-9]{12}$/);
      await browser.screenshot(page, "error");
      await suite.waitForOutput(new RegExp(`Unexpected failure ${reference} while GET /ui/posture`), { service: "console" });
    } finally {
      await suite.startService("admin");
    }
  });
});
