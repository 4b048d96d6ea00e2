// npm's web login against an npm repository (docs/integration/npm.md, "npm login"), with the
// machine's real npm 11 and Debian's Chromium signed in through the test OpenID Connect
// provider: `npm login --auth-type=web` prints the console's confirmation page; the person signs
// in, confirms, and npm receives a new personal key, saves it, and whoami, publish and install
// work with it. The legacy name-and-password login is answered with the way to the web login;
// a sign-in's key is handed out once, to the poller alone. Screenshots under
// .data/screenshots/npm-login/.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { launchBrowser, screenshotIn, type TestBrowser } from "./browser.js";
import { run, scratchEnv } from "./npm-clients.js";
import { startIdentityProvider, type TestIdentityProvider } from "./oidc-provider.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let idp: TestIdentityProvider;
let browser: TestBrowser;
const REPO = "npm-login";
let dir = "";
let env: Record<string, string> = {};
const registry = () => `${s.gatewayUrl}/repository/${REPO}/`;
const asAdmin = (method: string, path: string, body?: object) => s.call(method, path, { key: s.bootstrapKey, body });

beforeAll(async () => {
  idp = await startIdentityProvider();
  s = await startSuite({ env: { SVC_PROFILE: "dev", ...idp.consoleEnv() } });
  idp.configure(s.gatewayUrl);
  browser = await launchBrowser();
  await s.createRepository(REPO, "npm");
  // npm sends no Service-Repository-Name: the repository its path names decides.
  expect((await asAdmin("PATCH", `/api/repositories/${REPO}`, { scopeFromPath: true })).status).toBe(200);
  expect((await asAdmin("POST", "/api/groups/npm-devs/grants", { scope: REPO, tokens: ["deploy"] })).status).toBe(200);
  expect((await asAdmin("POST", "/api/groups/npm-devs/members", { id: "oidc/bob" })).status).toBe(201);
  dir = mkdtempSync(join(tmpdir(), "svc-npm-login-"));
  // browser=false: npm prints the login URL and opens nothing, as on a machine without a desktop.
  env = scratchEnv(dir, { npm_config_browser: "false" });
});
afterAll(async () => {
  await browser?.context.close();
  await s?.stop();
  await idp?.stop();
});

const shot = (page: Page, name: string) => screenshotIn("npm-login", page, name);
/** The svc client's bundle, as its users run it (built by the test set-up, test-e2e/cli.test.ts). */
const CLI = resolve(import.meta.dirname, "..", "packages", "cli", "dist", "svc.mjs");

/** Runs a command, collecting what it prints; `waitFor` reads the output so far. */
function started(command: string, args: string[], childEnv: Record<string, string>) {
  const child = spawn(command, args, { cwd: dir, env: childEnv });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number>((done) => child.on("close", (code) => done(code ?? 1)));
  const printed = (re: RegExp) =>
    vi.waitFor(
      () => {
        const m = re.exec(out.stdout + out.stderr);
        if (!m) throw new Error(`${command} printed nothing like ${re} yet:\n${out.stdout}${out.stderr}`);
        return m;
      },
      { timeout: 60_000, interval: 200 },
    );
  return { out, exited, printed };
}

/** Signs in at the test provider from the console's sign-in page the browser was sent to. */
async function signInHere(page: Page, login: string): Promise<void> {
  await page.waitForURL(`${s.gatewayUrl}/login`);
  await page.getByRole("link", { name: "Sign in with Test IdP" }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
}

let page: Page;

describe("npm login", () => {
  it("npm login --auth-type=web: the person signs in and confirms in the console, npm saves a personal key; whoami, publish and install work with it", async () => {
    const npmLogin = started("npm", ["login", "--auth-type=web", `--registry=${registry()}`], env);
    const loginUrl = (await npmLogin.printed(/(http:\/\/\S+\/ui\/cli-login\?code=[A-Z0-9-]+)/))[1]!;
    // Signed out, the login URL leads through the sign-in and back to the confirmation.
    page = await browser.newPage();
    await page.goto(loginUrl);
    await signInHere(page, "bob");
    await page.waitForURL(loginUrl);
    expect(await page.locator("#confirm-login-heading").innerText()).toBe("Sign in npm (npm login)?");
    expect(loginUrl).toContain(await page.locator("#login-code-shown").innerText());
    await shot(page, "confirm");
    await page.getByRole("button", { name: "Confirm sign-in" }).click();
    expect(await page.locator("#login-done").innerText()).toMatch(/go back to your terminal/);
    await shot(page, "confirmed");
    expect(await npmLogin.exited).toBe(0);
    expect(npmLogin.out.stdout + npmLogin.out.stderr).toMatch(/Logged in/);
    const npmrc = readFileSync(join(dir, "npmrc"), "utf8");
    expect(npmrc).toMatch(new RegExp(`/repository/${REPO}/:_authToken=svck_default\\.`));

    const whoami = await run("npm", ["whoami", `--registry=${registry()}`], { cwd: dir, env });
    expect(whoami.output).toContain("oidc/bob");
    expect(whoami.code).toBe(0);

    const pkg = join(dir, "pkg");
    mkdirSync(pkg);
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "logged-in-pkg", version: "1.0.0" }));
    writeFileSync(join(pkg, "index.js"), "module.exports = 42;\n");
    const published = await run("npm", ["publish", `--registry=${registry()}`], { cwd: pkg, env });
    expect(published.output).toContain("+ logged-in-pkg@1.0.0");
    expect(published.code).toBe(0);
    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true }));
    const installed = await run("npm", ["install", "logged-in-pkg", `--registry=${registry()}`], { cwd: app, env });
    expect(installed.code).toBe(0);
    expect(readFileSync(join(app, "node_modules", "logged-in-pkg", "index.js"), "utf8")).toBe("module.exports = 42;\n");

    // The key is bob's, listed among his keys.
    const keys = (await (await asAdmin("GET", "/api/credentials?owner=oidc%2Fbob")).json()) as { label: string; state: string }[];
    expect(keys).toEqual([expect.objectContaining({ label: `npm login (${REPO})`, state: "active" })]);
  });

  it("the legacy login with a name and password is answered with the way to the web login", async () => {
    const res = await fetch(`${registry()}-/user/org.couchdb.user:bob`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ _id: "org.couchdb.user:bob", name: "bob", password: "secret", type: "user", roles: [] }),
    });
    expect(res.status).toBe(403);
    // npm prints the body of the refusal after its status line.
    expect(await res.text()).toContain(`npm login --auth-type=web --registry=${registry()}`);
  });

  it("a sign-in's key goes to the poller alone, once: 202 while waiting, then the key, then nothing; the login code gets nothing", async () => {
    const started = await s.call("POST", "/api/logins", { body: { client: "svc" } });
    expect(started.status).toBe(201);
    const { code, loginPath, donePath } = (await started.json()) as { code: string; loginPath: string; donePath: string };
    expect(loginPath).toBe(`/ui/cli-login?code=${code}`);
    expect(donePath).not.toContain(code);
    const waiting = await s.call("GET", donePath);
    expect(waiting.status).toBe(202);
    expect(waiting.headers.get("retry-after")).toBe("2");
    expect((await s.call("GET", `/api/logins/${code}`)).status).toBe(404);
    await page.goto(`${s.gatewayUrl}${loginPath}`);
    await page.getByRole("button", { name: "Confirm sign-in" }).click();
    const done = await s.call("GET", donePath);
    expect(done.status).toBe(200);
    const { token, person } = (await done.json()) as { token: string; person: string };
    expect(person).toBe("oidc/bob");
    expect((await s.call("GET", "/api/me", { key: token })).status).toBe(200);
    expect((await s.call("GET", donePath)).status).toBe(404);
    // Confirmed once: the page says so rather than confirming again.
    await page.goto(`${s.gatewayUrl}${loginPath}`);
    expect(await page.locator(".problem").innerText()).toMatch(/no sign-in is waiting with this code/i);
  });

  it("svc login: prints the console's page and a code; once the person confirms, keeps a personal key in ~/.config/svc/login.json (mode 0600) that later commands use", async () => {
    const home = join(dir, "svc-home");
    mkdirSync(home);
    const svcEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home };
    const login = started(process.execPath, [CLI, "login", "--url", s.gatewayUrl], svcEnv);
    const [, url, code] = await login.printed(/Open (http:\/\/\S+\/ui\/cli-login\?code=([A-Z0-9-]+)) in a browser, sign in, and confirm the code ([A-Z0-9-]+)/);
    await page.goto(url!);
    expect(await page.locator("#confirm-login-heading").innerText()).toBe("Sign in the svc command-line client (svc login)?");
    expect(await page.locator("#login-code-shown").innerText()).toBe(code);
    await page.getByRole("button", { name: "Confirm sign-in" }).click();
    expect(await login.exited).toBe(0);
    expect(login.out.stdout).toMatch(/^Signed in as oidc\/bob: personal key [0-9a-f]{12} kept in .*login\.json/);
    const file = join(home, ".config", "svc", "login.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const kept = JSON.parse(readFileSync(file, "utf8")) as { url: string; key: string; person: string };
    expect(kept).toMatchObject({ url: s.gatewayUrl, person: "oidc/bob" });
    expect(kept.key).toMatch(/^svck_default\./);
    // Later commands need neither --url nor a key.
    const whoami = started(process.execPath, [CLI, "whoami", "--json"], svcEnv);
    expect(await whoami.exited).toBe(0);
    expect(JSON.parse(whoami.out.stdout)).toMatchObject({ kind: "key", label: expect.stringMatching(/^svc login \(/) });
  });
});
