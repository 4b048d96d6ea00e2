// Personal keys (docs/administration/credentials.md, "Personal keys"), in a real browser (Debian's
// Chromium through playwright-core) signed in through the test OpenID Connect provider: a person
// holding only a read right mints one on "Your keys" with no manage right; the key holds the
// rights the person chose, never more than they hold now, so a right their group gains or loses
// reaches the key on every gateway at once; an administrator finds a person's keys and revokes
// one; removing the person stops them all; the audit trail records minting and revoking.
// Screenshots under .data/screenshots/personal-keys/.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { launchBrowser, screenshotIn, signInWithTestIdp, type TestBrowser } from "./browser.js";
import { startIdentityProvider, type TestIdentityProvider } from "./oidc-provider.js";
import { startSuite, type Suite } from "./suite.js";
import type { SecondGateway } from "./two-gateways.js";

let s: Suite;
let b: SecondGateway;
let idp: TestIdentityProvider;
let browser: TestBrowser;
const BOB = "oidc/bob";

const asAdmin = (method: string, path: string, body?: object) => s.call(method, path, { key: s.bootstrapKey, body });
const groupGrant = (tokens: string[]) => asAdmin("POST", "/api/groups/readers/grants", { scope: "default", tokens });

beforeAll(async () => {
  idp = await startIdentityProvider();
  s = await startSuite({ env: { SVC_PROFILE: "dev", ...idp.consoleEnv() } });
  idp.configure(s.gatewayUrl);
  b = await s.startGateway();
  browser = await launchBrowser();
  expect((await asAdmin("POST", "/api/principals/grants", { id: "oidc/alice", scope: "*", tokens: ["admin"] })).status).toBe(200);
  // Bob holds one right, through a group: reading the default repository.
  expect((await groupGrant(["repository:read"])).status).toBe(200);
  expect((await asAdmin("POST", "/api/groups/readers/members", { id: BOB })).status).toBe(201);
  expect((await asAdmin("PUT", "/repository/default/shared.txt", { headers: { "service-repository-name": "default" }, body: "shared" })).status).toBe(201);
});
afterAll(async () => {
  await browser?.context.close();
  await b?.stop();
  await s?.stop();
  await idp?.stop();
});

const signIn = (login: string): Promise<Page> => signInWithTestIdp(browser, s.gatewayUrl, login);

/** The other gateway hears of a change over NATS (credential.changed), a moment after the call that made it answered. */
const settled = { timeout: 15_000, interval: 100 };

const shot = (page: Page, name: string) => screenshotIn("personal-keys", page, name);
const notice = (page: Page) => page.locator("p.notice").innerText();
/** Through the second gateway: what a key may do must reach every node, not only the one that changed it. */
const readOn = (base: string, key: string) => fetch(`${base}/repository/default/shared.txt`, { headers: { "service-repository-key": key, "service-repository-name": "default" } });
const putOn = (base: string, key: string, path: string) =>
  fetch(`${base}/repository/default/${path}`, { method: "PUT", headers: { "service-repository-key": key, "service-repository-name": "default" }, body: "x" });

async function mintInPage(page: Page, label: string, some?: { scope: string; tokens: string }): Promise<void> {
  await page.goto(`${s.gatewayUrl}/ui/my-keys`);
  await page.getByLabel("Label").fill(label);
  if (some) {
    await page.getByLabel("Only these:").check();
    await page.getByLabel("Scope").fill(some.scope);
    await page.getByLabel("Rights", { exact: true }).fill(some.tokens);
  }
  await page.getByRole("button", { name: "Mint key" }).click();
}

let bobPage: Page;
let allKey = "";
let readKey = "";

describe("personal keys", () => {
  it("a person holding only a read right mints a key for themselves in the console, holding all their rights: it reads and cannot write", async () => {
    bobPage = await signIn("bob");
    await bobPage.getByRole("link", { name: "Your keys" }).click();
    await bobPage.waitForURL(`${s.gatewayUrl}/ui/my-keys`);
    expect(await bobPage.locator("#held-rights").innerText()).toContain("default: repository:read");
    await shot(bobPage, "your-keys");
    await mintInPage(bobPage, "bob laptop");
    expect(await notice(bobPage)).toBe("Personal key minted");
    allKey = await bobPage.locator("#issued-key").inputValue();
    expect(allKey).toMatch(/^svck_default\./);
    expect(await bobPage.locator("#minted-rights").innerText()).toBe("*: *");
    await shot(bobPage, "minted");
    expect((await readOn(b.url, allKey)).status).toBe(200);
    expect((await putOn(b.url, allKey, "bob/a.txt")).status).toBe(403);
    // Holding * on the key gives no manage right the person lacks.
    expect((await fetch(`${b.url}/api/credentials`, { headers: { "service-repository-key": allKey } })).status).toBe(403);
    await bobPage.goto(`${s.gatewayUrl}/ui/my-keys`);
    expect(await bobPage.locator("#my-keys").innerText()).toContain("bob laptop");
  });

  it("the key follows its person's rights on every gateway: a right their group gains reaches it, a right the group loses is gone at once", async () => {
    expect((await putOn(s.gatewayUrl, allKey, "bob/a.txt")).status).toBe(403);
    expect((await groupGrant(["deploy"])).status).toBe(200);
    // At once on the gateway the change went through; on the other as soon as it hears of it.
    expect((await putOn(s.gatewayUrl, allKey, "bob/a.txt")).status).toBe(201);
    await vi.waitFor(async () => expect((await putOn(b.url, allKey, "bob/b.txt")).status).toBe(201), settled);
    // Narrowed, not refused: the key still reads; it only lost writing, on both gateways.
    expect((await groupGrant(["repository:read"])).status).toBe(200);
    expect((await putOn(s.gatewayUrl, allKey, "bob/c.txt")).status).toBe(403);
    await vi.waitFor(async () => expect((await putOn(b.url, allKey, "bob/c.txt")).status).toBe(403), settled);
    expect((await readOn(b.url, allKey)).status).toBe(200);
    expect((await readOn(s.gatewayUrl, allKey)).status).toBe(200);
  });

  it("a person cannot put on a key a right they do not hold; a key with some of their rights holds those only", async () => {
    await mintInPage(bobPage, "too much", { scope: "default", tokens: "deploy" });
    expect(await notice(bobPage)).toBe("Not done: you do not hold repository:write, cache:* over default: a personal key holds at most your own rights");
    await shot(bobPage, "more-than-held");
    await mintInPage(bobPage, "read default", { scope: "default", tokens: "repository:read" });
    readKey = await bobPage.locator("#issued-key").inputValue();
    expect(await bobPage.locator("#minted-rights").innerText()).toBe("default: repository:read");
    expect((await readOn(b.url, readKey)).status).toBe(200);
  });

  it("revoking one's own key asks first, naming it; cancelling keeps it, confirming revokes it at once", async () => {
    await mintInPage(bobPage, "short lived");
    const shortKey = await bobPage.locator("#issued-key").inputValue();
    await bobPage.goto(`${s.gatewayUrl}/ui/my-keys`);
    const row = bobPage.locator("#my-keys tbody tr", { hasText: "short lived" });
    await row.getByRole("button", { name: "Revoke…" }).click();
    expect(await bobPage.locator("#confirm-heading").innerText()).toBe("Revoke your key “short lived”?");
    await shot(bobPage, "confirm-revoke");
    await bobPage.getByRole("link", { name: "Cancel: keep the key" }).click();
    expect((await readOn(s.gatewayUrl, shortKey)).status).toBe(200);
    await bobPage.locator("#my-keys tbody tr", { hasText: "short lived" }).getByRole("button", { name: "Revoke…" }).click();
    await bobPage.getByRole("button", { name: "Revoke key short lived" }).click();
    expect(await notice(bobPage)).toMatch(/revoked$/);
    expect((await readOn(s.gatewayUrl, shortKey)).status).toBe(401);
    // Another person's key id is not one of bob's: nothing to confirm.
    await bobPage.goto(`${s.gatewayUrl}/ui/my-keys/revoke?id=${"0".repeat(64)}`);
    expect(await notice(bobPage)).toBe("Not done: you have no such key");
  });

  it("the API: a signed-in person mints, lists and revokes their own keys with no manage right; a key cannot mint personal keys", async () => {
    const csrf = (await bobPage.locator('meta[name="csrf-token"]').getAttribute("content")) ?? "";
    const call = (method: string, path: string, body?: object) =>
      bobPage.evaluate(
        async ([m, p, c, bd]) => {
          const res = await fetch(p, { method: m, headers: { "x-svc-csrf": c, ...(bd ? { "content-type": "application/json" } : {}) }, body: bd ? JSON.stringify(bd) : undefined });
          return { status: res.status, body: await res.text() };
        },
        [method, path, csrf, body] as const,
      );
    const minted = await call("POST", "/api/me/credentials", { label: "from the api", all: true });
    expect(minted.status).toBe(201);
    const m = JSON.parse(minted.body) as { id: string; key: string; expires: string; grants: unknown[] };
    expect(m.grants).toEqual([{ scope: "*", tokens: ["*"] }]);
    // The default lifetime (90 days) applies.
    expect(Date.parse(m.expires) - Date.now()).toBeGreaterThan(89 * 86_400_000);
    const listed = await call("GET", "/api/me/credentials");
    expect(listed.status).toBe(200);
    const mine = JSON.parse(listed.body) as { id: string; label: string; owner: string }[];
    expect(mine.map((k) => k.label).sort()).toEqual(["bob laptop", "from the api", "read default", "short lived"]);
    expect(mine.every((k) => k.owner === BOB)).toBe(true);
    expect((await readOn(b.url, m.key)).status).toBe(200);
    expect((await call("DELETE", `/api/me/credentials/${m.id}`)).status).toBe(204);
    await vi.waitFor(async () => expect((await readOn(b.url, m.key)).status).toBe(401), settled);
    // Someone else's key is no key of yours.
    const other = await s.mint({ label: "not bob's" });
    expect((await call("DELETE", `/api/me/credentials/${other.id}`)).status).toBe(404);
    // A key, even a personal one, mints none.
    const byKey = await s.call("POST", "/api/me/credentials", { key: allKey, body: { all: true } });
    expect(byKey.status).toBe(403);
    expect(await byKey.text()).toMatch(/signed-in person/);
  });

  it("an administrator finds a person's personal keys from the people page and revokes one", async () => {
    const page = await signIn("alice");
    await page.goto(`${s.gatewayUrl}/ui/people`);
    await page.locator("tr", { hasText: BOB }).getByRole("link", { name: "personal keys" }).click();
    expect(await page.locator("#keys-heading").innerText()).toBe(`Personal keys of ${BOB}`);
    const rows = page.locator("#credentials tbody tr");
    expect(await rows.count()).toBe(4);
    await shot(page, "admin-person-keys");
    await rows.filter({ hasText: "read default" }).getByRole("button", { name: "Revoke…" }).click();
    await page.getByRole("button", { name: /^Revoke key/ }).click();
    expect(await notice(page)).toMatch(/revoked$/);
    await vi.waitFor(async () => expect((await readOn(b.url, readKey)).status).toBe(401), settled);
    const key = (await (await asAdmin("GET", "/api/credentials?owner=oidc%2Fbob")).json()) as { label: string; state: string; owner: string }[];
    expect(key.find((k) => k.label === "read default")).toMatchObject({ state: "revoked", owner: BOB });
  });

  it("removing the person stops every key of theirs", async () => {
    expect((await readOn(b.url, allKey)).status).toBe(200);
    expect((await asAdmin("DELETE", `/api/principals?id=${encodeURIComponent(BOB)}`)).status).toBe(204);
    expect((await readOn(s.gatewayUrl, allKey)).status).toBe(401);
    await vi.waitFor(async () => expect((await readOn(b.url, allKey)).status).toBe(401), settled);
    const keys = (await (await asAdmin("GET", "/api/credentials?owner=oidc%2Fbob")).json()) as { state: string }[];
    expect(keys.map((k) => k.state)).toEqual(["revoked", "revoked", "revoked", "revoked"]);
  });

  it("the audit trail records minting and revoking a personal key, naming the person", async () => {
    const res = await asAdmin("GET", "/api/audit?action=key.personal&limit=50");
    expect(res.status).toBe(200);
    const entries = ((await res.json()) as { entries: { action: string; actor: { kind: string; id: string } }[] }).entries;
    expect(entries.filter((e) => e.action === "key.personal.issue")).toHaveLength(4);
    expect(entries.filter((e) => e.action === "key.personal.revoke")).toHaveLength(2);
    expect(entries.every((e) => e.actor.kind === "person" && e.actor.id === BOB)).toBe(true);
  });
});
