import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { expect, inject } from "vitest";

/**
 * Debian's Chromium driven by playwright-core (never a downloaded browser): one browser per test
 * file on an empty user-data folder (removed at the end); each `newPage()` starts with no cookies,
 * as another person's browser would.
 */
export interface TestBrowser {
  context: BrowserContext;
  /** Requests the browser tried to send off this machine (refused): the console itself must make none. */
  offMachine: string[];
  /** A new tab, the browser's cookies cleared first. */
  newPage(): Promise<Page>;
  /** Saves a screenshot of `page` as `<name>.png` in the run's screenshot folder; returns the file. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** Screenshots stay after the run (the test data folder is removed with it) so a person can look at them. */
export const SCREENSHOT_DIR = resolve(import.meta.dirname, "..", ".data", "screenshots");

/**
 * The set-up's Chromium with no profile folder, for a file that keeps several people signed in at
 * once (one `browser.newContext()` each); a file with one person at a time takes `launchBrowser()`.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: inject("chromium"), headless: true, args: FLAGS });
}

/** Saves a screenshot of `page` as `<folder>/<name>.png` in the run's screenshot folder ("": at its top); returns the file. */
export async function screenshotIn(folder: string, page: Page, name: string): Promise<string> {
  const dir = join(SCREENSHOT_DIR, folder);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** The dev profile's accounts; each one's password is its own name. */
export type DevAccount = "admin" | "viewer";

/** Fills and sends the dev profile's sign-in form as a person would, waiting for nothing after. */
export async function submitDevSignIn(page: Page, gatewayUrl: string, account: string, password = account): Promise<void> {
  await page.goto(`${gatewayUrl}/login/dev`);
  await page.getByLabel("Account").fill(account);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** Signs `page` in as a dev profile account: resolves on the console's home, which names that account. */
export async function signInDev(page: Page, gatewayUrl: string, account: DevAccount): Promise<Page> {
  await submitDevSignIn(page, gatewayUrl, account);
  await page.waitForURL(`${gatewayUrl}/ui/`);
  expect(await page.textContent("#signed-in-id")).toBe(`dev/${account}`);
  return page;
}

/**
 * Posts a console form from the signed-in page as if its form were there (the page's own
 * anti-forgery token added): what a person gets who posts a form the page did not offer them.
 */
export async function postFromPage(page: Page, path: string, fields: Record<string, string>): Promise<{ status: number; text: string }> {
  const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content")) ?? "";
  return page.evaluate(
    async ([p, f]) => {
      const res = await fetch(p, { method: "POST", body: new URLSearchParams(f) });
      return { status: res.status, text: await res.text() };
    },
    [path, { _csrf: csrf, ...fields }] as const,
  );
}

export async function launchBrowser(): Promise<TestBrowser> {
  const userDataDir = mkdtempSync(join(tmpdir(), "svc-chromium-"));
  // A persistent context is how playwright takes a user-data folder.
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: inject("chromium"), headless: true, args: FLAGS });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // Nothing leaves the machine: the test provider's own page asks for a web font, which would
  // otherwise wait on the network.
  const offMachine: string[] = [];
  await context.route(
    (url) => !["127.0.0.1", "localhost", "[::1]"].includes(url.hostname),
    (route) => {
      offMachine.push(route.request().url());
      return route.abort();
    },
  );
  return {
    context,
    offMachine,
    async newPage() {
      for (const p of context.pages()) await p.close();
      await context.clearCookies();
      return context.newPage();
    },
    screenshot: (page, name) => screenshotIn("", page, name),
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Signs in at the test OpenID Connect provider (any password for a known user) in a new tab; resolves on the console's home. */
export async function signInWithTestIdp(browser: TestBrowser, gatewayUrl: string, login: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${gatewayUrl}/`); // the persistent context has no base URL
  await page.waitForURL(`${gatewayUrl}/login`);
  await page.getByRole("link", { name: "Sign in with Test IdP" }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL(`${gatewayUrl}/ui/`);
  return page;
}
