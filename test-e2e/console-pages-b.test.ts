// The Repositories, Credentials, People and groups and Webhooks pages in a real browser (Debian's
// Chromium through playwright-core), signed in with the dev profile's admin: each page opened, its
// main action done once, a screenshot of each saved under the test data folder.
import { readFileSync } from "node:fs";
import pg from "pg";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, postFromPage, screenshotIn, signInDev } from "./browser.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let browser: Browser;
let page: Page;

async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; ; i++) {
    const v = await check();
    if (v !== undefined) return v;
    if (i > 400) throw new Error(`still waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const shot = (name: string) => screenshotIn("console-pages-b", page, name);
const notice = () => page.locator("p.notice").innerText();

beforeAll(async () => {
  s = await startSuite({
    env: {
      SVC_PROFILE: "dev",
      SVC_UI_DEPLOY: "true",
      // Deliveries to an internal address are set aside at once: a set-aside delivery to send again.
      SVC_WEBHOOK: "true",
      SVC_WEBHOOK_ENDPOINTS: "https://localhost:9/hook none",
      SVC_WEBHOOK_ALLOW_INTERNAL: "false",
    },
  });
  browser = await launchChromium();
  const context = await browser.newContext({ baseURL: s.gatewayUrl, acceptDownloads: true });
  page = await signInDev(await context.newPage(), s.gatewayUrl, "admin");
});
afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

describe("Credentials", () => {
  it("issues a key whose secret is shown once, lists it and revokes it", async () => {
    await page.goto("/ui/credentials");
    await shot("credentials");
    await page.getByLabel("Label").first().fill("from the browser");
    await page.getByRole("button", { name: "Issue key" }).click();
    const secret = await page.locator("#issued-key").inputValue();
    expect(secret).toMatch(/^svck_default\./);
    await shot("credentials-issued");

    await page.goto("/ui/credentials");
    expect(await page.content()).not.toContain(secret);
    const row = page.locator("#credentials tr", { hasText: "from the browser" });
    await expect(row.count()).resolves.toBe(1);
    await row.getByRole("button", { name: "Revoke" }).click();
    // A confirmation page naming the key; only its button revokes.
    expect(await page.locator("main h2").innerText()).toBe("Revoke the key “from the browser”?");
    await page.getByRole("button", { name: "Revoke key from the browser" }).click();
    expect(await notice()).toMatch(/^Key [0-9a-f]{12} revoked$/);
    expect(await page.locator("#credentials tr", { hasText: "from the browser" }).innerText()).toContain("revoked");
    // The key no longer opens anything.
    expect((await s.call("GET", "/api/capabilities", { key: secret })).status).toBe(401);
  });

  it("manages keys with a pasted managing key kept only in the page's memory", async () => {
    await page.goto("/ui/credentials");
    await page.getByLabel("Managing key", { exact: true }).fill(s.bootstrapKey);
    await page.getByRole("button", { name: "Use this key" }).click();
    await page.locator("#key-mode:not([hidden])").waitFor();
    expect(await page.getByLabel("Managing key", { exact: true }).inputValue()).toBe("");
    await page.locator("#key-mode-label").fill("pasted-key mode");
    await page.getByRole("button", { name: "Issue key with the managing key" }).click();
    await page.locator("#key-mode-secret-value").waitFor();
    expect(await page.locator("#key-mode-secret-value").inputValue()).toMatch(/^svck_default\./);
    await page.locator("#key-mode-list tr", { hasText: "pasted-key mode" }).waitFor();
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    expect(stored).not.toContain(s.bootstrapKey);
    await shot("credentials-managing-key");
  });
});

describe("a person without the right", () => {
  it("offers the viewer no Issue form, and answers the 403 page naming what is missing when the viewer posts one anyway", async () => {
    const context = await browser.newContext({ baseURL: s.gatewayUrl });
    const viewer = await context.newPage();
    try {
      await signInDev(viewer, s.gatewayUrl, "viewer");
      // The viewer holds manage:read, so the list shows; issuing needs manage:write, so no form is offered.
      await viewer.goto("/ui/credentials");
      expect(await viewer.getByRole("button", { name: "Issue key", exact: true }).count()).toBe(0);
      // Posted anyway (the form as an administrator's page has it), the gateway refuses it.
      const answer = await postFromPage(viewer, "/ui/credentials", { _action: "issue", label: "not allowed" });
      expect(answer.status).toBe(403);
      expect(answer.text).toContain("manage:write");
      await screenshotIn("console-pages-b", viewer, "credentials-viewer");
    } finally {
      await context.close();
    }
    const labels = ((await (await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).json()) as { label: string | null }[]).map((c) => c.label);
    expect(labels).not.toContain("not allowed");
  });
});

describe("People and groups", () => {
  it("grants a person rights, adds them to a group and removes them", async () => {
    await page.goto("/ui/people");
    await page.locator("#person-id").fill("oidc/browser-person");
    await page.locator("#person-scope").fill("*");
    await page.locator("#person-tokens").fill("read-only");
    await page.getByRole("button", { name: "Grant" }).click();
    expect(await notice()).toContain("Granted oidc/browser-person");
    expect(await page.locator("#people tr", { hasText: "oidc/browser-person" }).innerText()).toContain("repository:read");
    await shot("people");

    await page.locator("#member-group").fill("browser team");
    await page.locator("#member-id").fill("oidc/browser-person");
    await page.getByRole("button", { name: "Add member" }).click();
    await page.waitForURL("**/ui/people/groups/browser%20team");
    expect(await page.locator("#members").innerText()).toContain("oidc/browser-person");
    await shot("group");
    await page.locator("#members tr", { hasText: "oidc/browser-person" }).getByRole("button", { name: "Remove" }).click();
    expect(await notice()).toBe("Removed oidc/browser-person from browser team");
    expect(await page.locator("#members").innerText()).not.toContain("oidc/browser-person");
  });
});

describe("Repositories", () => {
  it("sets and removes a rate-limit override under Limits", async () => {
    await page.goto("/ui/repositories");
    await page.locator("#limit-rpm").fill("90000");
    await page.getByRole("button", { name: "Set override" }).click();
    expect(await page.locator("#rate-limits").innerText()).toContain("90000 requests per minute");
    await shot("repositories");
    await page.getByRole("button", { name: "Remove override" }).click();
    expect(await notice()).toBe("Rate limit override for default removed");
    expect(await page.locator("#rate-limits").innerText()).toContain("No overrides");
  });

  it("browses a repository's files by prefix and downloads one", async () => {
    expect((await s.call("PUT", "/repository/default/browse/hello.txt", { key: s.bootstrapKey, body: "hello from the store" })).status).toBe(201);
    await page.goto("/ui/repositories");
    await page.getByRole("link", { name: "default", exact: true }).click();
    await page.getByLabel("Path starts with").fill("browse/");
    await page.getByRole("button", { name: "Show" }).click();
    const link = page.getByRole("link", { name: "browse/hello.txt" });
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    expect(readFileSync((await download.path())!, "utf8")).toBe("hello from the store");
    await shot("repository-files");
  });

  it("deploys a file from the browser through the upload route", async () => {
    await page.goto("/ui/repositories/default");
    await page.getByLabel("File", { exact: true }).setInputFiles({ name: "note.txt", mimeType: "text/plain", buffer: Buffer.from("deployed from a browser") });
    await page.getByLabel("Path in the repository").fill("deployed/note.txt");
    await page.getByRole("button", { name: "Deploy" }).click();
    await page.locator("#deploy-result", { hasText: "Deployed deployed/note.txt" }).waitFor();
    await shot("repository-deploy");
    expect(await (await s.call("GET", "/repository/default/deployed/note.txt", { key: s.bootstrapKey })).text()).toBe("deployed from a browser");
  });
});

describe("10,000 keys and 10,000 files", () => {
  it("the Credentials page and a repository's files show one page of them, with a link to the next", async () => {
    const db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
    try {
      await db.query(`insert into auth.credentials (id, tenant, label, expires_at)
        select encode(sha256(('many-' || i)::bytea), 'hex'), 'default', 'many ' || i, now() + interval '60 days' from generate_series(1, 10000) as i`);
      await db.query(`insert into artifacts.artifacts (repository, path, size, sha256)
        select 'default', 'many/' || lpad(i::text, 5, '0') || '.bin', i, repeat('0', 64) from generate_series(1, 10000) as i`);
    } finally {
      await db.end();
    }
    for (const [url, table] of [["/ui/credentials", "#credentials"], ["/ui/repositories/default?prefix=many/", "#files"]] as const) {
      const started = performance.now();
      await page.goto(url);
      // Reported, not asserted: the machine's speed is not the test's to assume.
      console.log(`${url} with 10,000 rows behind it: ${Math.round(performance.now() - started)} ms`);
      expect(await page.locator(`${table} tbody tr`).count()).toBe(50);
      await page.getByRole("link", { name: /^Next / }).click();
      expect(await page.locator(`${table} tbody tr`).count()).toBe(50);
    }
  });
});

describe("Webhooks", () => {
  it("sends a set-aside delivery again", async () => {
    expect((await s.call("PUT", "/repository/default/hooked/a.txt", { key: s.bootstrapKey, body: "a" })).status).toBe(201);
    const setAside = await until("a set-aside delivery", async () => {
      const list = (await (await s.call("GET", "/api/webhooks/deliveries?state=set-aside", { key: s.bootstrapKey })).json()) as { id: string; attempts: number }[];
      return list[0];
    });
    await page.goto("/ui/webhooks?state=set-aside");
    await shot("webhooks");
    await page.locator("#deliveries tr").filter({ has: page.locator(`input[name="id"][value="${setAside.id}"]`) }).getByRole("button", { name: "Send again" }).click();
    expect(await notice()).toBe(`Delivery ${setAside.id} queued to be sent again`);
    await until("the delivery to be tried again", async () => {
      const d = (await (await s.call("GET", `/api/webhooks/deliveries/${setAside.id}`, { key: s.bootstrapKey })).json()) as { attempts: number };
      return d.attempts > setAside.attempts ? true : undefined;
    });
  });
});
