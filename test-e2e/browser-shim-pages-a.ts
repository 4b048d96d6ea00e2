import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

/**
 * Debian's Chromium (/usr/bin/chromium, never a downloaded browser) through playwright-core, for
 * console-pages-a.test.ts until the console core's test-e2e/browser.ts (the same interface,
 * with the project's own Chromium install) is in main; then this file goes.
 */
export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
export const SCREENSHOT_DIR = resolve(import.meta.dirname, "..", ".data", "screenshots");
export async function launchBrowser(): Promise<TestBrowser> {
  const userDataDir = mkdtempSync(join(tmpdir(), "svc-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, { executablePath: "/usr/bin/chromium", headless: true, args: FLAGS });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    context,
    async newPage() {
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
