import { describe, expect, it } from "vitest";
import { renderReadme } from "./readme.js";
import { setMeUpSection, setupSnippets } from "./set-me-up.js";
import { installCommand } from "./content-views.js";

describe("a package's readme", () => {
  it("shows raw HTML as text: a script or an event handler in a readme never becomes markup", () => {
    const out = renderReadme('# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror="alert(2)">').text;
    expect(out).not.toContain("<script");
    expect(out).not.toContain("<img");
    expect(out).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(out).toContain("<h3>Title</h3>");
  });

  it("renders headings, lists, fenced code and links to http(s) only", () => {
    const out = renderReadme("## Use\n\n- one\n- **two**\n\n```js\nconst a = '<b>';\n```\n\n[site](https://example.com) [bad](javascript:alert(1))").text;
    expect(out).toContain("<h4>Use</h4>");
    expect(out).toContain("<ul><li>one</li><li><strong>two</strong></li></ul>");
    expect(out).toContain("<pre><code>const a = &#39;&lt;b&gt;&#39;;</code></pre>");
    expect(out).toContain('<a href="https://example.com">site</a>');
    expect(out).not.toContain('href="javascript:');
  });
});

describe("set me up", () => {
  const base = { base: "https://repo.example.com", repository: "team-npm", format: "npm", scopeFromPath: false };

  it("gives npm and pnpm their .npmrc lines for this server and repository, the key as a placeholder", () => {
    const [npm, pnpm] = setupSnippets(base);
    expect(npm!.text).toBe("registry=https://repo.example.com/repository/team-npm/\n//repo.example.com/repository/team-npm/:_authToken=${NPM_TOKEN}");
    expect(pnpm!.text).toContain("# ~/.npmrc\n//repo.example.com/repository/team-npm/:_authToken=${NPM_TOKEN}");
  });

  it("says a header-less client needs scopeFromPath until it is on", () => {
    expect(setMeUpSection(base).text).toContain("switches on team-npm&#39;s scopeFromPath");
    expect(setMeUpSection({ ...base, scopeFromPath: true }).text).toContain("authorised by its path (scopeFromPath on)");
  });

  it("gives Maven its server with the repository header and distributionManagement", () => {
    const [settings, dm] = setupSnippets({ ...base, repository: "libs", format: "maven" });
    expect(settings!.text).toContain("<property><name>Service-Repository-Name</name><value>libs</value></property>");
    expect(dm!.text).toContain("<repository><id>libs</id><url>https://repo.example.com/repository/libs</url></repository>");
  });

  it("gives pip its index URL and twine its .pypirc", () => {
    const [pip, pypirc] = setupSnippets({ ...base, repository: "py", format: "pypi" });
    expect(pip!.text).toBe("[global]\nindex-url = https://__token__:<your key>@repo.example.com/repository/py/simple/");
    expect(pypirc!.text).toContain("[py]\nrepository = https://repo.example.com/repository/py/\nusername = __token__\npassword = <your key>");
  });

  it("names each format's install line", () => {
    expect(installCommand("npm", "http://h:1", "r", "@acme/x")).toBe("npm install @acme/x --registry http://h:1/repository/r/");
    expect(installCommand("oci", "http://h:1", "c", "team/app", "sha256:ab")).toBe("docker pull h:1/c/team/app@sha256:ab");
    expect(installCommand("raw", "http://h:1", "r", "x")).toBeUndefined();
  });
});
