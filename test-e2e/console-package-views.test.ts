// Package-aware repository views in a real browser (Debian's Chromium through playwright-core),
// signed in through the test OpenID Connect provider: content published through the clients'
// own protocols (an npm publish document as `npm publish` sends it, a Maven deploy as PUTs of its
// files, a PyPI upload as twine's form, raw files), then each repository's page lists its
// packages as its format names them, a package's page shows its versions, dist-tags, readme (a
// <script> in it shown as text, never run) and install line, a Maven folder is a page (also when
// a browser opens the folder's /repository/ URL), the Repositories page searches every
// repository by name, and each repository's "Set me up" names this server and that repository.
// Screenshots under the test data folder.
import { createHash, randomBytes } from "node:crypto";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, screenshotIn, type TestBrowser } from "./browser.js";
import { startIdentityProvider, type TestIdentityProvider } from "./oidc-provider.js";
import { uploadForm } from "./pypi-clients.js";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
let idp: TestIdentityProvider;
let browser: TestBrowser;
let page: Page;
let base = "";

const README = "# Widget\n\nA **fine** widget for dashboards.\n\n- small\n- fast\n\n<script>window.__readmeRan = 1</script>\n\n<img src=x onerror=\"window.__readmeRan = 2\">";

/** An npm publish document, as `npm publish` sends it (the readme in the version's manifest). */
function npmDoc(name: string, version: string, tags: Record<string, string>, readme?: string) {
  const tgz = Buffer.from(`tarball of ${name}@${version} ${randomBytes(8).toString("hex")}`);
  const file = `${name.slice(name.lastIndexOf("/") + 1)}-${version}.tgz`;
  return {
    name,
    versions: { [version]: { name, version, description: "Dashboards' widget", ...(readme ? { readme } : {}), dist: { shasum: createHash("sha1").update(tgz).digest("hex") } } },
    "dist-tags": tags,
    _attachments: { [file]: { content_type: "application/octet-stream", data: tgz.toString("base64"), length: tgz.length } },
  };
}

async function ok(r: Promise<Response>, status = [200, 201]) {
  const res = await r;
  expect(status, `${res.status} ${await res.clone().text()}`).toContain(res.status);
}

beforeAll(async () => {
  idp = await startIdentityProvider();
  s = await startSuite({ env: { SVC_PROFILE: "dev", ...idp.consoleEnv() } });
  idp.configure(s.gatewayUrl);
  base = new URL(s.gatewayUrl).origin;
  browser = await launchBrowser();
  expect((await s.call("POST", "/api/principals/grants", { key: s.bootstrapKey, body: { id: "oidc/alice", scope: "*", tokens: ["admin"] } })).status).toBe(200);
  const key = s.bootstrapKey;
  for (const [name, format] of [["web-npm", "npm"], ["libs", "maven"], ["py", "pypi"], ["files", "raw"]] as const) {
    await ok(s.call("POST", "/api/repositories", { key, body: { name, format } }));
  }
  // npm: two versions of a scoped package, the second under its own dist-tag.
  await ok(s.call("PUT", "/repository/web-npm/@acme%2fwidget", { key, body: npmDoc("@acme/widget", "1.0.0", { latest: "1.0.0" }, README) }));
  await ok(s.call("PUT", "/repository/web-npm/@acme%2fwidget", { key, body: npmDoc("@acme/widget", "2.0.0-rc.1", { next: "2.0.0-rc.1" }) }));
  // Maven: a deploy's files, PUT one by one as mvn deploy does.
  const jar = Buffer.from(`jar ${randomBytes(8).toString("hex")}`);
  const pom = '<project><modelVersion>4.0.0</modelVersion><groupId>com.acme</groupId><artifactId>app</artifactId><version>1.0</version></project>';
  for (const [file, body] of [["app-1.0.jar", jar], ["app-1.0.pom", Buffer.from(pom)]] as const) {
    await ok(s.call("PUT", `/repository/libs/com/acme/app/1.0/${file}`, { key, headers: { "service-repository-name": "libs" }, body }));
  }
  // PyPI: twine's upload form.
  const wheel = Buffer.from(`wheel ${randomBytes(8).toString("hex")}`);
  const form = uploadForm({ name: "acme-tool", version: "0.3.0", sha256_digest: createHash("sha256").update(wheel).digest("hex") }, { name: "acme_tool-0.3.0-py3-none-any.whl", content: wheel });
  const basic = `Basic ${Buffer.from(`__token__:${key}`).toString("base64")}`;
  await ok(s.call("POST", "/repository/py/", { headers: { authorization: basic, "content-type": form.contentType }, body: form.body }));
  // raw: files in folders.
  await ok(s.call("PUT", "/repository/files/docs/guide/intro.txt", { key, body: "hello" }));

  page = await browser.newPage();
  await page.goto(`${s.gatewayUrl}/`);
  await page.waitForURL(`${s.gatewayUrl}/login`);
  await page.getByRole("link", { name: "Sign in with Test IdP" }).click();
  await page.locator('input[name="login"]').fill("alice");
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL(`${s.gatewayUrl}/ui/`);
});
afterAll(async () => {
  await browser?.context.close();
  await s?.stop();
  await idp?.stop();
});

const shot = (name: string) => screenshotIn("console-package-views", page, name);
const cells = (selector: string) => page.locator(`${selector} tbody tr`).evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => (td as HTMLElement).innerText.trim())));

describe("package-aware repository views", () => {
  it("an npm repository lists its packages; a package's page shows its versions, dist-tags, install line and readme, whose script never runs", async () => {
    await page.goto(`${s.gatewayUrl}/ui/repositories/web-npm`);
    expect(await page.locator("#content-heading").innerText()).toBe("Packages in web-npm");
    const rows = await cells("#packages");
    expect(rows).toHaveLength(1);
    expect(rows[0]!.slice(0, 3)).toEqual(["@acme/widget", "2.0.0-rc.1", "2"]);
    const setup = await page.locator("#set-me-up").innerText();
    expect(setup).toContain(`registry=${base}/repository/web-npm/`);
    expect(setup).toContain(`//${new URL(base).host}/repository/web-npm/:_authToken=\${NPM_TOKEN}`);
    expect(setup).toContain("switches on web-npm's scopeFromPath");
    expect(setup).not.toMatch(/svck_/);
    await shot("npm-repository");

    await page.getByRole("link", { name: "@acme/widget", exact: true }).click();
    await page.waitForURL(/\/ui\/repositories\/web-npm\/package\?name=%40acme%2Fwidget$/);
    expect(await cells("#tags")).toEqual([
      ["latest", "1.0.0"],
      ["next", "2.0.0-rc.1"],
    ]);
    const versions = await cells("#versions");
    expect(versions.map((r) => r[0])).toEqual(["2.0.0-rc.1 next", "1.0.0 latest"]);
    expect(versions[1]![2]).toContain("widget-1.0.0.tgz");
    expect(await page.locator("#install-command").innerText()).toBe(`npm install @acme/widget --registry ${base}/repository/web-npm/`);
    expect(await page.locator("#package-description").innerText()).toBe("Dashboards' widget");
    const readme = page.locator("#readme");
    expect(await readme.locator("h3").innerText()).toBe("Widget");
    expect(await readme.locator("strong").innerText()).toBe("fine");
    expect(await readme.locator("li").allInnerTexts()).toEqual(["small", "fast"]);
    expect(await readme.innerText()).toContain("<script>window.__readmeRan = 1</script>");
    expect(await readme.locator("script, img").count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __readmeRan?: number }).__readmeRan)).toBeUndefined();
    await shot("npm-package");
  });

  it("a Maven repository lists group:artifact and browses by group, artifact and version; its folder URL opens the folder's page", async () => {
    await page.goto(`${s.gatewayUrl}/ui/repositories/libs`);
    expect(await page.locator("#content-heading").innerText()).toBe("Artifacts (group:artifact) in libs");
    expect((await cells("#packages")).map((r) => r.slice(0, 3))).toEqual([["com.acme:app", "1.0", "1"]]);
    const setup = await page.locator("#set-me-up").innerText();
    expect(setup).toContain("<property><name>Service-Repository-Name</name><value>libs</value></property>");
    expect(setup).toContain(`<repository><id>libs</id><url>${base}/repository/libs</url></repository>`);
    expect(setup).toContain("<distributionManagement>");
    await shot("maven-repository");

    await page.getByRole("link", { name: "Browse libs as folders" }).click();
    for (const folder of ["com/", "acme/", "app/", "1.0/"]) await page.getByRole("link", { name: folder, exact: true }).click();
    expect(await page.locator("#folder-heading").innerText()).toBe("Folder com/acme/app/1.0/");
    expect((await cells("#folder")).map((r) => r[0])).toEqual(expect.arrayContaining(["app-1.0.jar", "app-1.0.pom"]));
    expect(await page.locator("#breadcrumbs").innerText()).toBe("libs / com / acme / app / 1.0");
    await shot("maven-version-folder");

    // A browser opening the folder itself gets its page, not "400 empty segment"; a client still gets the 400.
    await page.goto(`${s.gatewayUrl}/repository/libs/com/acme/`);
    await page.waitForURL(/\/ui\/repositories\/libs\/browse\?path=com%2Facme%2F$/);
    expect(await page.locator("#folder-heading").innerText()).toBe("Folder com/acme/");
    expect((await cells("#folder")).map((r) => r[0])).toEqual(["app/"]);
    expect((await s.call("GET", "/repository/libs/com/acme/", { key: s.bootstrapKey })).status).toBe(400);
    await shot("maven-folder-url");
  });

  it("a PyPI repository lists its projects, each version with its files; pip.conf and .pypirc name this server", async () => {
    await page.goto(`${s.gatewayUrl}/ui/repositories/py`);
    expect(await page.locator("#content-heading").innerText()).toBe("Projects in py");
    const setup = await page.locator("#set-me-up").innerText();
    expect(setup).toContain(`index-url = ${base.replace("://", "://__token__:<your key>@")}/repository/py/simple/`);
    expect(setup).toContain(`[py]\nrepository = ${base}/repository/py/\nusername = __token__\npassword = <your key>`);
    await page.getByRole("link", { name: "acme-tool", exact: true }).click();
    const versions = await cells("#versions");
    expect(versions.map((r) => r[0])).toEqual(["0.3.0"]);
    expect(versions[0]![2]).toContain("acme_tool-0.3.0-py3-none-any.whl");
    expect(await page.locator("#install-command").innerText()).toBe(`pip install --index-url ${base}/repository/py/simple/ acme-tool`);
    await shot("pypi-project");
  });

  it("a raw repository is a folder tree with curl's set-up", async () => {
    await page.goto(`${s.gatewayUrl}/ui/repositories/files`);
    expect(await page.locator("#set-me-up").innerText()).toContain(`-H "Service-Repository-Name: files" -T <file> ${base}/repository/files/<path>`);
    await page.getByRole("link", { name: "Browse files as folders" }).click();
    expect((await cells("#folder")).map((r) => r[0])).toEqual(["docs/"]);
    await page.getByRole("link", { name: "docs/", exact: true }).click();
    await page.getByRole("link", { name: "guide/", exact: true }).click();
    expect((await cells("#folder")).map((r) => r[0])).toEqual(["intro.txt"]);
    await shot("raw-folder");
  });

  it("the Repositories page searches every repository by name, its results leading to the package's page", async () => {
    await page.goto(`${s.gatewayUrl}/ui/repositories`);
    await page.getByLabel("Package, artifact or file name").fill("widget");
    await page.getByRole("button", { name: "Search" }).click();
    const rows = await cells("#search-results");
    expect(rows.map((r) => r.slice(0, 3))).toEqual([
      ["web-npm npm", "@acme/widget", "1.0.0"],
      ["web-npm npm", "@acme/widget", "2.0.0-rc.1"],
    ]);
    await shot("search");
    await page.locator("#search-results").getByRole("link", { name: "@acme/widget" }).first().click();
    await page.waitForURL(/\/ui\/repositories\/web-npm\/package\?name=%40acme%2Fwidget$/);

    await page.goto(`${s.gatewayUrl}/ui/repositories?q=APP-1.0`);
    expect((await cells("#search-results")).map((r) => r.slice(0, 3))).toEqual([["libs maven", "com.acme:app", "1.0"]]);
  });
});
