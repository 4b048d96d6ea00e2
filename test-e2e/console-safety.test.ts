// The console's safer controls in a real browser (Debian's Chromium through playwright-core),
// signed in with the dev profile's accounts: the viewer (manage:read only) is offered no form
// that changes anything on any page; revoking a key goes through a confirmation page naming it,
// which warns loudly for the bootstrap key; the console's icon is answered through the gateway.
// Screenshots under the test data folder.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyId } from "@svc/keys";
import { launchChromium, screenshotIn, signInDev } from "./browser.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let browser: Browser;
let admin: Page;
let viewer: Page;

beforeAll(async () => {
  s = await startSuite({ env: { SVC_PROFILE: "dev", SVC_UI_DEPLOY: "true" } });
  browser = await launchChromium();
  admin = await signInDev(await (await browser.newContext({ baseURL: s.gatewayUrl })).newPage(), s.gatewayUrl, "admin");
  viewer = await signInDev(await (await browser.newContext({ baseURL: s.gatewayUrl })).newPage(), s.gatewayUrl, "viewer");
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

describe("a viewer", () => {
  it("sees every page but no form that changes anything on any of them", async () => {
    const group = await s.call("POST", "/api/groups/ops/members", { key: s.bootstrapKey, body: { id: "dev/admin" } });
    expect(group.status).toBeLessThan(300);
    const pages = ["/ui/credentials", "/ui/people", "/ui/people/groups/ops", "/ui/repositories", "/ui/repositories/default", "/ui/screening", "/ui/settings", "/ui/webhooks", "/ui/caches", "/ui/walks"];
    for (const path of pages) {
      expect((await viewer.goto(path))?.status(), path).toBe(200);
      // The header's Sign out is the only post form; the pasted managing-key mode acts with the pasted key's rights.
      const posting = await viewer.locator('main form[method="post"], main input[name="_action"], main #deploy-form').count();
      expect(posting, path).toBe(0);
      const buttons = await viewer.locator("main button:visible").allInnerTexts();
      expect(buttons.filter((b) => /^(Issue|Revoke|Grant|Create|Remove|Delete|Add|Save|Set|Clear|Walk|Send|Release|Discard|Switch|Deploy)/.test(b)), path).toEqual([]);
    }
    await screenshotIn("console-safety", viewer, "viewer-credentials");
  });
});

describe("revoking a key", () => {
  it("asks for confirmation naming the key; only the confirmation revokes", async () => {
    const minted = await s.mint({ label: "release bot" });
    await admin.goto("/ui/credentials");
    await admin.locator("#credentials tr", { hasText: "release bot" }).getByRole("button", { name: "Revoke" }).click();
    expect(await admin.locator("main h2").innerText()).toBe("Revoke the key “release bot”?");
    expect(await admin.locator("#bootstrap-warning").count()).toBe(0);
    await screenshotIn("console-safety", admin, "revoke-confirm");
    // Leaving the page changes nothing.
    // (a key without grants is refused for want of a right, 403, not as unknown, 401)
    expect((await s.call("GET", "/api/capabilities", { key: minted.key })).status).toBe(403);
    await admin.getByRole("button", { name: "Revoke key release bot" }).click();
    expect(await admin.locator("p.notice").innerText()).toMatch(/^Key [0-9a-f]{12} revoked$/);
    expect((await s.call("GET", "/api/capabilities", { key: minted.key })).status).toBe(401);
  });

  it("warns loudly before revoking the bootstrap key", async () => {
    await admin.goto(`/ui/credentials/revoke?id=${keyId(s.bootstrapKey)}`);
    expect(await admin.locator("#bootstrap-warning").innerText()).toContain("This is the bootstrap key.");
    expect(await admin.getByRole("button", { name: "Revoke the bootstrap key" }).count()).toBe(1);
    await screenshotIn("console-safety", admin, "revoke-bootstrap");
    await admin.getByRole("link", { name: /Cancel/ }).click();
    expect((await s.call("GET", "/api/capabilities", { key: s.bootstrapKey })).status).toBe(200);
  });
});

describe("the console's icon", () => {
  it("is answered at /favicon.ico through the gateway and linked from the pages", async () => {
    const res = await fetch(`${s.gatewayUrl}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(await res.text()).toMatch(/^<svg /);
    expect(await admin.locator('link[rel="icon"]').getAttribute("href")).toBe("/ui/assets/favicon.svg");
  });
});
