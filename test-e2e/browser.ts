import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { inject } from "vitest";

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
    async screenshot(page, name) {
      const file = join(SCREENSHOT_DIR, `${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
