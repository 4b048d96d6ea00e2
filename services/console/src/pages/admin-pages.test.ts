import { describe, expect, it } from "vitest";
import { credentialsPage } from "./credentials-page.js";
import { PAGES } from "./index.js";
import { ApiRefusal, type ApiResult, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { peopleGroupsPage } from "./people-groups-page.js";
import { repositoriesPage } from "./repositories-page.js";
import { screeningPage } from "./screening-page.js";
import { webhooksPage } from "./webhooks-page.js";

type Answer = Partial<ApiResult> & { status: number };

/** A page context whose API answers from `routes` ("METHOD /path?query" -> answer) and records every call. */
function fakeCtx(routes: Record<string, Answer>, over: Partial<PageContext> = {}) {
  const calls: { method: string; path: string; body?: unknown }[] = [];
  const ctx: PageContext = {
    person: { id: "dev/admin", tenant: "default" },
    subpath: "",
    query: {},
    form: {},
    csrf: "tok-123",
    // An administrator unless a test says otherwise.
    may: () => true,
    options: { deployEnabled: false, publicBaseUrl: "" },
    async api<T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
      calls.push({ method, path, body });
      const a = routes[`${method} ${path}`] ?? routes[`${method} ${path.split("?")[0]}`];
      if (!a) throw new Error(`unexpected call ${method} ${path}`);
      return { headers: {}, body: undefined as T, ...a } as ApiResult<T>;
    },
    ...over,
  };
  return { ctx, calls };
}

const text = (o: PageOutcome) => (o.kind === "html" ? o.main.text : "");
const forbidden: Answer = { status: 403, body: { title: "Forbidden", detail: "manage:read at * is missing" } };
const DAY = 86_400_000;
const key = (n: number, over: object = {}) => ({
  id: String(n).padStart(64, "a"),
  label: `key ${n}`,
  created: new Date().toISOString(),
  expires: new Date(Date.now() + 90 * DAY).toISOString(),
  state: "active",
  expiringSoon: false,
  allowedAddresses: [],
  grants: [],
  ...over,
});

const MINE = ["Repositories", "Credentials", "People and groups", "Webhooks"];

describe("navigation", () => {
  it("lists these pages in the spec's order with their names", () => {
    expect(PAGES.map((p) => p.nav).filter((n) => MINE.includes(n))).toEqual(MINE);
    expect(PAGES.map((p) => p.nav).indexOf("Repositories")).toBeGreaterThan(PAGES.map((p) => p.nav).indexOf("Posture"));
  });
});

describe("Credentials page", () => {
  it("pages the list, marks keys expiring within 14 days, and escapes what the API says", async () => {
    const { ctx, calls } = fakeCtx(
      { "GET /api/credentials": { status: 200, body: [key(1, { expiringSoon: true, label: "<script>x</script>" }), key(2)], headers: { "x-next-cursor": "c2" } } },
      { query: { expiring: "soon", after: "c1" } },
    );
    const out = text(await credentialsPage.get(ctx));
    expect(calls[0]!.path).toBe("/api/credentials?limit=50&after=c1&expiring=P14D");
    expect(out.match(/expires within 14 days<\/strong>/g)).toHaveLength(1);
    expect(out).not.toContain("<script>x");
    expect(out).toContain("&lt;script&gt;x");
    expect(out).toContain('href="/ui/credentials?expiring=soon&amp;after=c2"');
    expect(out).toContain('name="_csrf" value="tok-123"');
  });

  it("lets a refusal through for the core's 403 page", async () => {
    const { ctx } = fakeCtx({ "GET /api/credentials": forbidden });
    await expect(credentialsPage.get(ctx)).rejects.toMatchObject({ status: 403, detail: "manage:read at * is missing" });
    await expect(credentialsPage.get(ctx)).rejects.toBeInstanceOf(ApiRefusal);
  });

  it("shows an issued key once, in the answer itself, never in a redirect's notice", async () => {
    const minted = { id: "f".repeat(64), key: "svck_default.secretpart", label: "ci", expires: null };
    const { ctx, calls } = fakeCtx({ "POST /api/credentials": { status: 201, body: minted } }, { form: { label: " ci ", expires: "" } });
    const out = await credentialsPage.actions!.issue!(ctx);
    expect(calls[0]!.body).toEqual({ label: "ci" });
    expect(out.kind).toBe("html");
    expect(text(out)).toContain('value="svck_default.secretpart"');
    expect(text(out)).toContain('data-copy="issued-key"');
  });

  it("revokes by id and says so; a bad expiry comes back as a notice", async () => {
    const id = "e".repeat(64);
    const { ctx, calls } = fakeCtx({ [`DELETE /api/credentials/${id}`]: { status: 204 } }, { form: { id } });
    expect(await credentialsPage.actions!.revoke!(ctx)).toEqual({ kind: "redirect", location: "/ui/credentials", notice: `Key ${id.slice(0, 12)} revoked` });
    expect(calls).toHaveLength(1);
    const bad = fakeCtx({ "POST /api/credentials": { status: 400, body: { detail: "expires must lie in the future" } } }, { form: { expires: "P0D" } });
    expect(await credentialsPage.actions!.issue!(bad.ctx)).toMatchObject({ kind: "redirect", notice: "Not done: expires must lie in the future" });
  });

  it("leads Revoke to a confirmation page naming the key, which alone posts the revoke", async () => {
    const k = key(3, { label: "ci <deploy>" });
    const list = fakeCtx({ "GET /api/credentials": { status: 200, body: [k] } });
    const out = text(await credentialsPage.get(list.ctx));
    // The list's button only opens the confirmation (a GET form): nothing there posts a revoke.
    expect(out).toContain(`<form method="get" action="/ui/credentials/revoke" class="action"><input type="hidden" name="id" value="${k.id}">`);
    expect(out).not.toContain('value="revoke"');

    const confirm = fakeCtx({ [`GET /api/credentials/${k.id}`]: { status: 200, body: k } }, { subpath: "/revoke", query: { id: k.id } });
    const page = text(await credentialsPage.get(confirm.ctx));
    expect(page).toContain("Revoke the key “ci &lt;deploy&gt;”?");
    expect(page).toContain('<input type="hidden" name="_action" value="revoke"><input type="hidden" name="id" value="' + k.id + '">');
    expect(page).toContain('name="_csrf" value="tok-123"');
    expect(page).toContain("Revoke key ci &lt;deploy&gt;</button>");
    expect(page).toContain('href="/ui/credentials">Cancel');
    expect(page).not.toContain("bootstrap key");
    expect(confirm.calls.map((c) => c.method)).toEqual(["GET"]);
  });

  it("warns loudly on the confirmation page when the key is the bootstrap key", async () => {
    const k = key(4, { label: "bootstrap key", bootstrap: true, expires: null });
    const { ctx } = fakeCtx({ [`GET /api/credentials/${k.id}`]: { status: 200, body: k } }, { subpath: "/revoke", query: { id: k.id } });
    const page = text(await credentialsPage.get(ctx));
    expect(page).toMatch(/<p class="problem" role="alert" id="bootstrap-warning"><strong>This is the bootstrap key\.<\/strong>/);
    expect(page).toContain("Revoke the bootstrap key</button>");
  });

  it("answers a malformed id or an already revoked key on the confirmation page without offering a revoke", async () => {
    const bad = fakeCtx({}, { subpath: "/revoke", query: { id: "../x" } });
    expect(await credentialsPage.get(bad.ctx)).toEqual({ kind: "redirect", location: "/ui/credentials", notice: "Not done: no such key" });
    const k = key(5, { state: "revoked" });
    const done = fakeCtx({ [`GET /api/credentials/${k.id}`]: { status: 200, body: k } }, { subpath: "/revoke", query: { id: k.id } });
    const page = text(await credentialsPage.get(done.ctx));
    expect(page).toContain("is revoked already");
    expect(page).not.toContain('value="revoke"');
  });
});

describe("People and groups page", () => {
  it("grants a person the tokens typed, and removes a group member", async () => {
    const { ctx, calls } = fakeCtx(
      { "POST /api/principals/grants": { status: 200, body: {} } },
      { form: { id: "oidc/abc", scope: "*", tokens: "repository:read, cache:read", expires: "" } },
    );
    expect(await peopleGroupsPage.actions!["grant-person"]!(ctx)).toMatchObject({ kind: "redirect", location: "/ui/people" });
    expect(calls[0]!.body).toEqual({ id: "oidc/abc", scope: "*", tokens: ["repository:read", "cache:read"] });

    const m = fakeCtx({ "DELETE /api/groups/dev%20team/members": { status: 204 } }, { subpath: "/groups/dev%20team", form: { id: "oauth/7" } });
    expect(await peopleGroupsPage.actions!["remove-member"]!(m.ctx)).toMatchObject({ location: "/ui/people/groups/dev%20team" });
    expect(m.calls[0]!.path).toBe("/api/groups/dev%20team/members?id=oauth%2F7");
  });

  it("shows a group's grants and one page of members", async () => {
    const { ctx } = fakeCtx(
      {
        "GET /api/groups/ops/members": { status: 200, body: [{ id: "oidc/a" }], headers: { "x-next-cursor": "oidc/a" } },
        "GET /api/groups/ops": { status: 200, body: { name: "ops", label: null, grants: [{ scope: "*", tokens: ["manage:read"], expires: null }], members: 2 } },
      },
      { subpath: "/groups/ops" },
    );
    const out = text(await peopleGroupsPage.get(ctx));
    expect(out).toContain("*: manage:read");
    expect(out).toContain("<code>oidc/a</code>");
    expect(out).toContain('href="/ui/people/groups/ops?after=oidc%2Fa"');
  });
});

describe("Repositories page", () => {
  const repoRoutes = (files: object[]): Record<string, Answer> => ({
    "GET /api/repositories/default/files": { status: 200, body: files },
    "GET /api/repositories/default/retention": { status: 404, body: { detail: "repository default has no retention policy" } },
    "GET /api/repositories/default": { status: 200, body: { name: "default", format: "raw" } },
    "GET /api/repositories?limit=500": { status: 200, body: [{ name: "default", format: "raw" }, { name: "copy", format: "raw" }, { name: "js", format: "npm" }] },
  });
  const file = { path: "a b/x#1.txt", size: 2048, sha256: "0".repeat(64), updated: new Date().toISOString(), downloads: 3, held: null };

  it("browses files with download links to the artifact route, and offers Deploy only when it is on", async () => {
    const off = fakeCtx(repoRoutes([file]), { subpath: "/default", query: { prefix: "a b/" } });
    const out = await repositoriesPage.get(off.ctx);
    expect(off.calls[0]!.path).toBe("/api/repositories/default/files?limit=50&prefix=a+b%2F");
    expect(text(out)).toContain('href="/repository/default/a%20b/x%231.txt" download');
    expect(text(out)).toContain("keep everything");
    expect(text(out)).not.toContain("deploy-form");
    const on = fakeCtx(repoRoutes([]), { subpath: "/default", options: { deployEnabled: true, publicBaseUrl: "" } });
    const withDeploy = await repositoriesPage.get(on.ctx);
    expect(text(withDeploy)).toContain('id="deploy-form" data-repository="default"');
    expect(withDeploy).toMatchObject({ scripts: ["deploy.js"] });
  });

  it("offers Export into the other repositories of the same format, then shows the export's progress", async () => {
    const { ctx } = fakeCtx(repoRoutes([]), { subpath: "/default" });
    const out = text(await repositoriesPage.get(ctx));
    expect(out).toContain('<option value="copy">copy</option>');
    expect(out).not.toContain('value="js"');
    expect(out).toContain('name="_action" value="export"');
    const started = fakeCtx({ "POST /api/repositories/default/export": { status: 202, body: { id: "0b6f3c1e-0000-4000-8000-000000000001" } } }, { subpath: "/default", form: { target: "copy" } });
    expect(await repositoriesPage.actions!.export!(started.ctx)).toEqual({
      kind: "redirect",
      location: "/ui/repositories/default/exports/0b6f3c1e-0000-4000-8000-000000000001",
      notice: "Export of default into copy started",
    });
    expect(started.calls[0]!.body).toEqual({ target: "copy" });
    const refused = fakeCtx({ "POST /api/repositories/default/export": { status: 409, body: { detail: "default is a raw repository and js a npm one" } } }, { subpath: "/default", form: { target: "js" } });
    expect(await repositoriesPage.actions!.export!(refused.ctx)).toMatchObject({ kind: "redirect", notice: "Not done: default is a raw repository and js a npm one" });
  });

  it("offers Import on a proxy repository (not a hosted one), sends the listed packages, then shows the import's counts", async () => {
    const hosted = fakeCtx(repoRoutes([]), { subpath: "/default" });
    expect(text(await repositoriesPage.get(hosted.ctx))).not.toContain('value="import"');
    const id = "0b6f3c1e-0000-4000-8000-000000000002";
    const record = { id, repository: "npmjs", target: "team", state: "done", actor: "admin", packages: 3, done: 3, imported: 4, skipped: 1, held: 1, refused: 1, refusals: [{ path: "evil/-/evil-1.0.0.tgz", reason: "MAL-2026-1 <script>" }], export: "0b6f3c1e-0000-4000-8000-000000000003", detail: null, started: new Date().toISOString(), ended: new Date().toISOString() };
    const proxy = fakeCtx(
      {
        "GET /api/repositories/npmjs/files": { status: 200, body: [] },
        "GET /api/repositories/npmjs/packages": { status: 200, body: [] },
        "GET /api/repositories/npmjs/retention": { status: 404, body: { detail: "none" } },
        "GET /api/repositories/npmjs": { status: 200, body: { name: "npmjs", format: "npm", type: "proxy" } },
        "GET /api/repositories?limit=500": { status: 200, body: [{ name: "npmjs", format: "npm", type: "proxy" }, { name: "team", format: "npm", type: "hosted" }, { name: "default", format: "raw", type: "hosted" }] },
        "GET /api/repositories/npmjs/imports?limit=10": { status: 200, body: [record] },
      },
      { subpath: "/npmjs" },
    );
    const page = text(await repositoriesPage.get(proxy.ctx));
    expect(page).toContain('name="_action" value="import"');
    expect(page).toContain('<option value="team">team</option>');
    expect(page).not.toContain('<option value="default">');
    expect(page).toContain(`href="/ui/repositories/npmjs/imports/${id}"`);
    const started = fakeCtx({ "POST /api/repositories/npmjs/imports": { status: 202, body: { id } } }, { subpath: "/npmjs", form: { packages: "lodash\r\n\n left-pad@1.3.0 \n", target: "team" } });
    expect(await repositoriesPage.actions!.import!(started.ctx)).toEqual({ kind: "redirect", location: `/ui/repositories/npmjs/imports/${id}`, notice: "Import of 2 packages into npmjs started" });
    expect(started.calls[0]!.body).toEqual({ packages: ["lodash", "left-pad@1.3.0"], target: "team" });
    const refused = fakeCtx({ "POST /api/repositories/npmjs/imports": { status: 400, body: { detail: "packages[0]: x is not an npm package name" } } }, { subpath: "/npmjs", form: { packages: "x y" } });
    expect(await repositoriesPage.actions!.import!(refused.ctx)).toMatchObject({ kind: "redirect", notice: "Not done: packages[0]: x is not an npm package name" });
    const view = fakeCtx({ [`GET /api/repositories/npmjs/imports/${id}`]: { status: 200, body: record } }, { subpath: `/npmjs/imports/${id}` });
    const shown = text(await repositoriesPage.get(view.ctx));
    expect(shown).toContain('data-state="done"');
    expect(shown).toContain("<td>4</td><td>1</td><td>1</td><td>1</td>");
    expect(shown).toContain("MAL-2026-1 &lt;script&gt;");
    expect(shown).toContain(`href="/ui/repositories/npmjs/exports/${record.export}"`);
  });

  it("sets a rate-limit override for a tenant", async () => {
    const { ctx, calls } = fakeCtx({ "PUT /api/rate-limits/default": { status: 200, body: {} } }, { form: { tenant: "default", requestsPerMinute: "120" } });
    expect(await repositoriesPage.actions!["set-limit"]!(ctx)).toMatchObject({ notice: "Rate limit for default set to 120 requests per minute" });
    expect(calls[0]!.body).toEqual({ requestsPerMinute: 120 });
  });
});

describe("Repositories page: creating, reshaping and removing repositories", () => {
  const listed = [
    { name: "default", format: "raw", type: "hosted", upstream: null, members: null, retention: null },
    { name: "npm-all", format: "npm", type: "group", upstream: null, members: ["team-npm", "npmjs"], retention: null },
    { name: "npmjs", format: "npm", type: "proxy", upstream: { url: "https://registry.npmjs.org/" }, members: null, retention: null },
    { name: "team-npm", format: "npm", type: "hosted", upstream: null, members: null, retention: null },
  ];
  const overview = (over: Record<string, Answer> = {}): Record<string, Answer> => ({
    "GET /api/repositories": { status: 200, body: listed },
    // Not hard-coded: whatever formats the server lists, with whether each may be a proxy.
    "GET /api/formats": { status: 200, body: [{ name: "npm", label: "npm", proxy: true }, { name: "toy", label: "toy (a test format)", proxy: false }] },
    "GET /api/rate-limits": { status: 200, body: { default: 0, tenants: [] } },
    ...over,
  });
  const view = (name: string, detail: object, over: Record<string, Answer> = {}): Record<string, Answer> => ({
    [`GET /api/repositories/${name}/files`]: { status: 200, body: [] },
    [`GET /api/repositories/${name}/packages`]: { status: 200, body: [] },
    [`GET /api/repositories/${name}/retention`]: { status: 404, body: { detail: "none" } },
    [`GET /api/repositories/${name}/imports`]: { status: 200, body: [] },
    [`GET /api/repositories/${name}`]: { status: 200, body: { ...listed.find((r) => r.name === name), artifacts: 0, bytes: 0, ...detail } },
    "GET /api/repositories?limit=500": { status: 200, body: listed },
    ...over,
  });

  it("lists each repository's type, a proxy's upstream and a group's members as links, and offers Create with the formats the server lists", async () => {
    const { ctx } = fakeCtx(overview());
    const out = text(await repositoriesPage.get(ctx));
    expect(out).toContain("<th scope=\"col\">Type</th>");
    expect(out).toMatch(/npm-all<\/a><\/td><td>npm<\/td><td>group<\/td><td><a href="\/ui\/repositories\/team-npm">team-npm<\/a>, <a href="\/ui\/repositories\/npmjs">npmjs<\/a><\/td>/);
    expect(out).toContain("<td>proxy</td><td><code>https://registry.npmjs.org/</code></td>");
    expect(out).toMatch(/team-npm<\/a><\/td><td>npm<\/td><td>hosted<\/td><td><\/td>/);
    // A group holds no files: no Export link.
    expect(out).not.toContain("Export npm-all");
    expect(out).toContain('name="_action" value="create"');
    expect(out).toContain('<option value="toy">toy (a test format)</option>');
    expect(out).toContain("formats: npm)");
    expect(out).toMatch(/<input id="create-password" name="password" type="password" value=""/);
    // Members offered: hosted and proxy repositories, never a group.
    expect(out).toContain('<option value="npmjs">npmjs (proxy, npm)</option>');
    expect(out).not.toContain('<option value="npm-all">');
    for (const m of out.matchAll(/<(?:input|select) id="([^"]+)"/g)) expect(out, m[1]).toContain(`<label for="${m[1]}">`);
  });

  it("creates a hosted, a proxy (with credentials) and a group (members in the order chosen) through POST /api/repositories", async () => {
    const created = (body: object): Answer => ({ status: 201, body });
    const hosted = fakeCtx({ "POST /api/repositories": created({ name: "team-npm", format: "npm", type: "hosted" }) }, { form: { name: " team-npm ", format: "npm", type: "hosted", url: "", username: "", password: "", token: "", "member-1": "" } });
    expect(await repositoriesPage.actions!.create!(hosted.ctx)).toEqual({ kind: "redirect", location: "/ui/repositories/team-npm", notice: "Repository team-npm created (hosted, npm)" });
    expect(hosted.calls[0]!.body).toEqual({ name: "team-npm", format: "npm" });

    const proxy = fakeCtx({ "POST /api/repositories": created({ name: "npmjs", format: "npm", type: "proxy" }) }, { form: { name: "npmjs", format: "npm", type: "proxy", url: "https://registry.npmjs.org/", username: "", password: "", token: "s3cret" } });
    expect(await repositoriesPage.actions!.create!(proxy.ctx)).toMatchObject({ kind: "redirect", notice: "Repository npmjs created (proxy, npm)" });
    expect(proxy.calls[0]!.body).toEqual({ name: "npmjs", format: "npm", type: "proxy", upstream: { url: "https://registry.npmjs.org/", credentials: { token: "s3cret" } } });

    const group = fakeCtx({ "POST /api/repositories": created({ name: "npm-all", format: "npm", type: "group" }) }, { form: { name: "npm-all", format: "npm", type: "group", "member-2": "npmjs", "member-1": "team-npm", "member-3": "" } });
    expect(await repositoriesPage.actions!.create!(group.ctx)).toMatchObject({ kind: "redirect", location: "/ui/repositories/npm-all" });
    expect(group.calls[0]!.body).toEqual({ name: "npm-all", format: "npm", type: "group", members: ["team-npm", "npmjs"] });
  });

  it("shows a refused create with the API's reason and what was typed, never the credentials", async () => {
    const reason = "upstream.url: http://127.0.0.1:9/ is not https; svc.block-private-import-hosts forbids it";
    const form = { name: "npmjs", format: "npm", type: "proxy", url: "http://127.0.0.1:9/", username: "ci", password: "pa55-word", token: "" };
    const { ctx, calls } = fakeCtx(overview({ "POST /api/repositories": { status: 400, body: { detail: reason } } }), { form });
    const out = await repositoriesPage.actions!.create!(ctx);
    expect(out.kind).toBe("html");
    expect(calls[0]!.body).toEqual({ name: "npmjs", format: "npm", type: "proxy", upstream: { url: "http://127.0.0.1:9/", credentials: { username: "ci", password: "pa55-word" } } });
    const page = text(out);
    expect(page).toContain(`<p class="problem" role="alert" id="create-problem">Not created: ${reason}</p>`);
    expect(page).toContain('id="create-name" name="name" type="text" value="npmjs"');
    expect(page).toContain('id="create-url" name="url" type="url" value="http://127.0.0.1:9/"');
    expect(page).toContain('id="create-username" name="username" type="text" value="ci"');
    expect(page).toContain('value="proxy" checked');
    expect(page).not.toContain("pa55-word");
    expect(page).toContain("Type the upstream credentials again");
    // The form comes first, where the person looks.
    expect(page.indexOf("create-problem")).toBeLessThan(page.indexOf('id="repositories"'));

    const taken = fakeCtx(overview({ "POST /api/repositories": { status: 409, body: { detail: "a repository named team-npm exists" } } }), { form: { name: "team-npm", format: "npm", type: "hosted" } });
    expect(text(await repositoriesPage.actions!.create!(taken.ctx))).toContain("Not created: a repository named team-npm exists");

    // An upstream typed for a hosted repository is refused here, not silently dropped.
    const mixed = fakeCtx(overview(), { form: { name: "x", format: "npm", type: "hosted", url: "https://registry.npmjs.org/" } });
    expect(text(await repositoriesPage.actions!.create!(mixed.ctx))).toContain("Not created: an upstream is for a proxy repository");
    expect(mixed.calls.filter((c) => c.method === "POST")).toEqual([]);
  });

  it("shows a group's members in order and saves a new order; shows a proxy's upstream and sets its cooldown", async () => {
    const group = fakeCtx(view("npm-all", {}), { subpath: "/npm-all" });
    const out = text(await repositoriesPage.get(group.ctx));
    expect(out).toContain('<dd id="repository-type">group</dd>');
    expect(out).toContain('<ol id="repository-members"><li><a href="/ui/repositories/team-npm">team-npm</a></li><li><a href="/ui/repositories/npmjs">npmjs</a></li></ol>');
    expect(out).toMatch(/<select id="member-1" name="member-1">.*<option value="team-npm" selected>/s);
    expect(out).toMatch(/<select id="member-2" name="member-2">.*<option value="npmjs" selected>/s);
    // Only its format's hosted and proxy repositories, not itself.
    expect(out).not.toContain('<option value="default"');
    expect(out).not.toContain('<option value="npm-all"');
    expect(out).not.toContain('value="export"');
    const save = fakeCtx({ "PUT /api/repositories/npm-all/members": { status: 200, body: {} } }, { subpath: "/npm-all", form: { "member-1": "npmjs", "member-2": "team-npm" } });
    expect(await repositoriesPage.actions!["set-members"]!(save.ctx)).toEqual({ kind: "redirect", location: "/ui/repositories/npm-all", notice: "Members of npm-all saved: npmjs, team-npm" });
    expect(save.calls[0]!.body).toEqual({ members: ["npmjs", "team-npm"] });
    const bad = fakeCtx({ "PUT /api/repositories/npm-all/members": { status: 400, body: { detail: "members: a group has one to 100 members" } } }, { subpath: "/npm-all", form: { "member-1": "" } });
    expect(await repositoriesPage.actions!["set-members"]!(bad.ctx)).toMatchObject({ notice: "Not done: members: a group has one to 100 members" });

    const proxy = fakeCtx(view("npmjs", { gate: { minAge: null } }), { subpath: "/npmjs" });
    const p = text(await repositoriesPage.get(proxy.ctx));
    expect(p).toContain('<code id="repository-upstream">https://registry.npmjs.org/</code>');
    expect(p).toContain('<dd id="repository-groups"><a href="/ui/repositories/npm-all">npm-all</a></dd>');
    expect(p).toContain("inherited from svc.gate.min-age");
    const set = fakeCtx({ "PUT /api/repositories/npmjs/gate": { status: 200, body: { minAge: "72h" } } }, { subpath: "/npmjs", form: { minAge: " 72h " } });
    expect(await repositoriesPage.actions!["set-cooldown"]!(set.ctx)).toMatchObject({ notice: "Minimum age of npmjs: 72h" });
    expect(set.calls[0]!.body).toEqual({ minAge: "72h" });
    const inherit = fakeCtx({ "PUT /api/repositories/npmjs/gate": { status: 200, body: { minAge: null } } }, { subpath: "/npmjs", form: { minAge: "" } });
    await repositoriesPage.actions!["set-cooldown"]!(inherit.ctx);
    expect(inherit.calls[0]!.body).toEqual({ minAge: null });
  });

  it("shows what a repository uses of its storage quota, sets the quota from a size with a unit, and creates a repository with one", async () => {
    const page = text(await repositoriesPage.get(fakeCtx(view("team-npm", { quotaBytes: 10 * 1024 ** 3, usedBytes: 3 * 1024 ** 3 }), { subpath: "/team-npm" }).ctx));
    expect(page).toContain('<strong id="quota-usage">3.0 GiB of 10 GiB (30%)</strong>');
    expect(page).toContain('name="_action" value="set-quota"');
    expect(page).toContain('id="quota-bytes" name="quota" type="text" value="10737418240"');
    const over = text(await repositoriesPage.get(fakeCtx(view("team-npm", { quotaBytes: 1000, usedBytes: 1500 }), { subpath: "/team-npm" }).ctx));
    expect(over).toContain("1.5 KiB of 1000 bytes (150%): over its quota, what adds to it is refused");
    // A group holds no files: no quota of its own.
    expect(text(await repositoriesPage.get(fakeCtx(view("npm-all", {}), { subpath: "/npm-all" }).ctx))).not.toContain("set-quota");

    const set = fakeCtx({ "PATCH /api/repositories/team-npm": { status: 200, body: { name: "team-npm", quotaBytes: 500 * 1024 ** 2, usedBytes: 0 } } }, { subpath: "/team-npm", form: { quota: " 500 MiB " } });
    expect(await repositoriesPage.actions!["set-quota"]!(set.ctx)).toEqual({ kind: "redirect", location: "/ui/repositories/team-npm", notice: "Storage quota of team-npm set: 0 bytes of 500 MiB (0%)" });
    expect(set.calls[0]!.body).toEqual({ quotaBytes: 500 * 1024 ** 2 });
    const cleared = fakeCtx({ "PATCH /api/repositories/team-npm": { status: 200, body: { name: "team-npm", quotaBytes: null, usedBytes: 0 } } }, { subpath: "/team-npm", form: { quota: "" } });
    expect(await repositoriesPage.actions!["set-quota"]!(cleared.ctx)).toMatchObject({ notice: "Storage quota of team-npm removed" });
    expect(cleared.calls[0]!.body).toEqual({ quotaBytes: null });
    const bad = fakeCtx({}, { subpath: "/team-npm", form: { quota: "lots" } });
    expect(await repositoriesPage.actions!["set-quota"]!(bad.ctx)).toMatchObject({ notice: expect.stringContaining("Not done: the storage quota must be a size") });
    expect(bad.calls).toEqual([]);

    const create = fakeCtx({ "POST /api/repositories": { status: 201, body: { name: "capped", format: "npm", type: "hosted" } } }, { form: { name: "capped", format: "npm", type: "hosted", quota: "2GB" } });
    await repositoriesPage.actions!.create!(create.ctx);
    expect(create.calls[0]!.body).toEqual({ name: "capped", format: "npm", quotaBytes: 2_000_000_000 });
    const list = text(await repositoriesPage.get(fakeCtx(overview()).ctx));
    expect(list).toContain('<th scope="col">Storage</th>');
    expect(list).toContain('id="create-quota" name="quota"');
  });

  it("offers Maven's release redeploy option on a hosted maven repository and saves it", async () => {
    const maven = { name: "team-maven", format: "maven", type: "hosted", upstream: null, members: null };
    const { ctx } = fakeCtx(view("team-maven", maven, { "GET /api/repositories/team-maven/maven": { status: 200, body: { releaseRedeploy: true } } }), { subpath: "/team-maven" });
    expect(text(await repositoriesPage.get(ctx))).toContain('<input type="checkbox" name="releaseRedeploy" value="true" checked> Allow redeploying a release');
    // Not on a repository of another format (its page asks nothing of the Maven route).
    expect(text(await repositoriesPage.get(fakeCtx(view("team-npm", {}), { subpath: "/team-npm" }).ctx))).not.toContain("releaseRedeploy");
    const off = fakeCtx({ "PUT /api/repositories/team-maven/maven": { status: 200, body: { releaseRedeploy: false } } }, { subpath: "/team-maven", form: {} });
    expect(await repositoriesPage.actions!["set-maven"]!(off.ctx)).toEqual({ kind: "redirect", location: "/ui/repositories/team-maven", notice: "Release redeploys in team-maven: refused" });
    expect(off.calls[0]!.body).toEqual({ releaseRedeploy: false });
  });

  it("removes only with the name typed again, offers force only when it holds artifacts or a group names it, and shows the API's refusal", async () => {
    const bare = text(await repositoriesPage.get(fakeCtx(view("default", {}), { subpath: "/default" }).ctx));
    expect(bare).toContain('name="_action" value="remove"');
    expect(bare).not.toContain('name="force"');
    const member = text(await repositoriesPage.get(fakeCtx(view("team-npm", { artifacts: 3 }), { subpath: "/team-npm" }).ctx));
    expect(member).toContain('<input type="checkbox" name="force" value="true"> Also remove its 3 artifacts (each as a client&#39;s DELETE would, with its event) and take it out of npm-all');

    const unconfirmed = fakeCtx({}, { subpath: "/team-npm", form: { confirm: "team" } });
    expect(await repositoriesPage.actions!.remove!(unconfirmed.ctx)).toMatchObject({ kind: "redirect", location: "/ui/repositories/team-npm", notice: "Not done: type team-npm to confirm its removal" });
    expect(unconfirmed.calls).toEqual([]);
    const refused = fakeCtx({ "DELETE /api/repositories/team-npm": { status: 409, body: { detail: "team-npm is a member of group npm-all: remove it from the group first, or use force=true" } } }, { subpath: "/team-npm", form: { confirm: "team-npm" } });
    expect(await repositoriesPage.actions!.remove!(refused.ctx)).toMatchObject({ location: "/ui/repositories/team-npm", notice: "Not done: team-npm is a member of group npm-all: remove it from the group first, or use force=true" });
    const forced = fakeCtx({ "DELETE /api/repositories/team-npm": { status: 204 } }, { subpath: "/team-npm", form: { confirm: "team-npm", force: "true" } });
    expect(await repositoriesPage.actions!.remove!(forced.ctx)).toEqual({ kind: "redirect", location: "/ui/repositories", notice: "Repository team-npm removed" });
    expect(forced.calls[0]!.path).toBe("/api/repositories/team-npm?force=true");
  });
});

describe("Webhooks page", () => {
  it("offers Send again for set-aside deliveries with their last error, not for pending or delivered ones", async () => {
    const d = (id: string, state: string) => ({ id, event: "e", type: "artifact.published", endpoint: "https://hook.example/x", state, attempts: 5, nextAttempt: null, lastStatus: 500, lastError: `boom ${id}`, created: "", updated: new Date().toISOString(), delivered: null });
    const { ctx } = fakeCtx({
      "GET /api/webhooks/deliveries": { status: 200, body: [d("1", "set-aside"), d("2", "pending"), d("3", "delivered")] },
      "GET /api/webhooks/endpoints": { status: 200, body: [] },
    });
    const out = text(await webhooksPage.get(ctx));
    expect(out).toContain("boom 1");
    expect(out.match(/Send again<\/button>/g)).toHaveLength(1);
    expect(out).toContain('name="id" value="1"');
  });
});

describe("every page", () => {
  const pages: [ConsolePage, Partial<PageContext>, Record<string, Answer>][] = [
    [credentialsPage, {}, { "GET /api/credentials": { status: 200, body: [key(1)] } }],
    [peopleGroupsPage, {}, { "GET /api/principals": { status: 200, body: [{ id: "oidc/a", label: null, grants: [{ scope: "*", tokens: ["*"], expires: null }] }] }, "GET /api/groups": { status: 200, body: [] } }],
    [
      repositoriesPage,
      {},
      {
        "GET /api/repositories": { status: 200, body: [{ name: "default", format: "raw", retention: null }] },
        "GET /api/formats": { status: 200, body: [{ name: "raw", label: "raw (files)", proxy: true }] },
        "GET /api/rate-limits": { status: 200, body: { default: 6000, tenants: [{ tenant: "default", requestsPerMinute: 10 }] } },
      },
    ],
    [webhooksPage, {}, { "GET /api/webhooks/deliveries": { status: 200, body: [] }, "GET /api/webhooks/endpoints": { status: 200, body: [] } }],
  ];

  it.each(pages)("labels every visible control (%s)", async (page, over, routes) => {
    const out = text(await page.get(fakeCtx(routes, over).ctx));
    for (const m of out.matchAll(/<input id="([^"]+)"/g)) expect(out, m[1]).toContain(`<label for="${m[1]}">`);
    expect(out).not.toMatch(/<script|\son[a-z]+=/i);
  });

  it.each(pages)("lets a 403 through (%s)", async (page, over, routes) => {
    const refused = Object.fromEntries(Object.keys(routes).map((k) => [k, forbidden]));
    await expect(page.get(fakeCtx(refused, over).ctx)).rejects.toMatchObject({ status: 403 });
  });
});

const now = new Date().toISOString();

const lists = (over: Record<string, Answer> = {}): Record<string, Answer> => ({
  "GET /api/advisories/status": { status: 200, body: { sources: [{ source: "/srv/osv", state: "loaded", records: 12, loaded: now, error: null }, { source: "https://osv.example/all.zip", state: "failed", records: 0, loaded: null, error: "answered 503" }], loaded: now, ageSeconds: 30, failed: 1 } },
  "GET /api/held": { status: 200, body: [{ id: "aGVsZA", repository: "npm", path: "evil/-/evil-1.0.0.tgz", reason: "evil@1.0.0 held: <malware>", held: now, downloads: 3 }] },
  "GET /api/findings": { status: 200, body: [{ id: "f1", repository: "npm", path: "evil/-/evil-1.0.0.tgz", name: "evil", version: "1.0.0", type: "malware", level: "CRITICAL", advisory: "MAL-2026-1", summary: "steals tokens", action: "HOLD", found: now, dataLoaded: now, downloads: 3, lastDownloaded: now, status: "open", triagedBy: null, triaged: null, note: null, downloaders: 3, downloadedBy: [{ principal: "key:ci-runner", first: now, last: now, downloads: 7 }, { principal: "person:dev/ann", first: now, last: now, downloads: 1 }] }, { id: "f2", repository: "npm", path: "old/-/old-1.0.0.tgz", name: "old", version: "1.0.0", type: "deny-list", level: null, advisory: "deny-list:d1", summary: "withdrawn", action: "WARN", found: now, dataLoaded: null, downloads: 0, lastDownloaded: null, status: "dismissed", triagedBy: "key:admin", triaged: now, note: "<not used>", downloaders: 0, downloadedBy: [] }], headers: { "x-next-cursor": "f1" } },
  "GET /api/refusals": { status: 200, body: [{ id: "r1", repository: "npm", path: "evil/-/evil-1.0.1.tgz", name: "evil", version: "1.0.1", reason: "evil@1.0.1 refused: <malware>", principal: "key:publisher", refused: now }] },
  "GET /api/deny-list": { status: 200, body: [{ id: "d1", ecosystem: "npm", name: "left-pad", versions: "<2", reason: "withdrawn", createdBy: "key:abc", created: now }] },
  "GET /api/gate/allows": { status: 200, body: [{ id: "a1", repository: null, ecosystem: "npm", name: "hot-fix", version: "2.0.1", reason: "<CVE fix>", createdBy: "key:abc", created: now }] },
  "GET /api/settings": { status: 200, body: { nodes: [], settings: [{ name: "svc.gate.min-age", runtime: true, value: "72h", tenants: [{ tenant: "acme", value: "" }], nodes: [] }] } },
  ...over,
});

describe("Screening page", () => {
  it("shows the data's state (a failed source flagged), held versions with Release and Discard, findings with their downloads, and the deny list", async () => {
    const { ctx, calls } = fakeCtx(lists(), { query: { repository: "npm" } });
    const out = text(await screeningPage.get(ctx));
    expect(out).toContain("30 s old");
    expect(out).toContain("1 source could not be read");
    expect(out).toContain("answered 503");
    expect(out).toContain("evil@1.0.0 held: &lt;malware&gt;");
    expect(out.match(/Release<\/button>/g)).toHaveLength(1);
    expect(out.match(/Discard<\/button>/g)).toHaveLength(1);
    expect(out).toContain("MAL-2026-1");
    expect(out).toContain("steals tokens");
    expect(out).toContain("left-pad");
    // Findings: who downloaded (the latest principals and how many more), Confirm and Dismiss on the open one only, the triage of the other.
    expect(out).toContain("key:ci-runner");
    expect(out).toContain("7×");
    expect(out).toContain("and 1 more");
    expect(out.match(/Confirm<\/button>/g)).toHaveLength(1);
    expect(out.match(/Dismiss<\/button>/g)).toHaveLength(1);
    expect(out).toContain("dismissed");
    expect(out).toContain("&lt;not used&gt;");
    // The refusal log: what was refused, why and who tried.
    expect(out).toContain("evil@1.0.1 refused: &lt;malware&gt;");
    expect(out).toContain("key:publisher");
    expect(calls.map((c) => c.path)).toEqual(
      expect.arrayContaining([expect.stringContaining("/api/held?limit=50&repository=npm"), expect.stringContaining("/api/findings?limit=50&repository=npm"), expect.stringContaining("/api/refusals?limit=50&repository=npm")]),
    );
    for (const m of out.matchAll(/<(?:input|select) id="([^"]+)"/g)) expect(out, m[1]).toContain(`<label for="${m[1]}">`);
  });

  it("asks the API for the findings of the status chosen, and confirms or dismisses one, keeping the filters", async () => {
    const { ctx, calls } = fakeCtx(lists(), { query: { repository: "npm", status: "open" } });
    await screeningPage.get(ctx);
    expect(calls.map((c) => c.path)).toContainEqual(expect.stringContaining("/api/findings?limit=50&repository=npm&status=open"));
    const confirm = fakeCtx({ "POST /api/findings/f1/confirm": { status: 200, body: {} } }, { form: { id: "f1" }, query: { repository: "npm", status: "open" } });
    expect(await screeningPage.actions!.confirm!(confirm.ctx)).toMatchObject({ kind: "redirect", location: "/ui/screening?repository=npm&status=open", notice: expect.stringContaining("Confirmed") });
    expect(confirm.calls).toEqual([{ method: "POST", path: "/api/findings/f1/confirm", body: {} }]);
    const dismiss = fakeCtx({ "POST /api/findings/f1/dismiss": { status: 409, body: { detail: "finding f1 is already confirmed" } } }, { form: { id: "f1" } });
    expect(await screeningPage.actions!.dismiss!(dismiss.ctx)).toMatchObject({ kind: "redirect", location: "/ui/screening", notice: "Not done: finding f1 is already confirmed" });
  });

  it("releases a held version and adds to the deny list through the API, and says why the API refused a bad range", async () => {
    const { ctx, calls } = fakeCtx({ "POST /api/held/aGVsZA/release": { status: 204 } }, { form: { id: "aGVsZA" } });
    expect(await screeningPage.actions!.release!(ctx)).toMatchObject({ kind: "redirect", location: "/ui/screening", notice: expect.stringContaining("Released") });
    expect(calls).toEqual([{ method: "POST", path: "/api/held/aGVsZA/release", body: {} }]);
    const refused = fakeCtx({ "POST /api/deny-list": { status: 400, body: { detail: '"[2,1]" is not a Maven version range' } } }, { form: { ecosystem: "Maven", name: "a:b", versions: "[2,1]", reason: "x" } });
    expect(await screeningPage.actions!.deny!(refused.ctx)).toMatchObject({ kind: "redirect", notice: 'Not done: "[2,1]" is not a Maven version range' });
    expect(refused.calls[0]!.body).toEqual({ ecosystem: "Maven", name: "a:b", versions: "[2,1]", reason: "x" });
  });
  it("shows the cooldown's minimum age and allows, and sets the age, adds and removes an allow", async () => {
    const { ctx } = fakeCtx(lists());
    const out = text(await screeningPage.get(ctx));
    expect(out).toContain("<code>72h</code>");
    expect(out).toContain("for tenant <code>acme</code>: <code>off</code>");
    expect(out).toContain("hot-fix");
    expect(out).toContain("&lt;CVE fix&gt;");
    expect(out).toContain("Let through the cooldown");
    const fixed = fakeCtx(lists({ "GET /api/settings": { status: 200, body: { nodes: [], settings: [{ name: "svc.gate.min-age", runtime: true, value: "3d", fixed: true, fixedAt: "environment SVC_GATE_MIN_AGE", nodes: [] }] } } }));
    const fixedOut = text(await screeningPage.get(fixed.ctx));
    expect(fixedOut).toContain("Fixed at start by environment SVC_GATE_MIN_AGE");
    expect(fixedOut).not.toContain("Set the minimum age");

    const set = fakeCtx({ "PUT /api/settings/gate.min-age": { status: 200, body: {} } }, { form: { value: "24h" } });
    expect(await screeningPage.actions!.minage!(set.ctx)).toMatchObject({ kind: "redirect", notice: "Minimum age set" });
    expect(set.calls[0]!.body).toEqual({ value: "24h" });
    const add = fakeCtx({ "POST /api/gate/allows": { status: 201, body: {} } }, { form: { ecosystem: "npm", name: "hot-fix", version: "", repository: "npmjs", reason: "fix" } });
    expect(await screeningPage.actions!.allow!(add.ctx)).toMatchObject({ kind: "redirect", notice: expect.stringContaining("hot-fix") });
    expect(add.calls[0]!.body).toEqual({ ecosystem: "npm", name: "hot-fix", repository: "npmjs", reason: "fix" });
    const remove = fakeCtx({ "DELETE /api/gate/allows/a1": { status: 204 } }, { form: { id: "a1" } });
    expect(await screeningPage.actions!.disallow!(remove.ctx)).toMatchObject({ kind: "redirect", notice: "Allow removed" });
  });
});

/** Holds manage:read over * and nothing else, like the dev profile's viewer. */
const viewer: Partial<PageContext> = { may: (right) => right === "manage:read" };
/** Any form that would post a change: the viewer must see none. */
const POSTING = /<form method="post"|name="_action"/;

describe("a viewer (manage:read only)", () => {
  const repoDetail: Record<string, Answer> = {
    "GET /api/repositories/default/files": { status: 200, body: [] },
    "GET /api/repositories/default/retention": { status: 200, body: { keepVersions: 3 } },
    "GET /api/repositories/default": { status: 200, body: { name: "default", format: "raw", type: "hosted", artifacts: 2, groups: [] } },
    "GET /api/repositories?limit=500": { status: 200, body: [{ name: "default", format: "raw" }, { name: "copy", format: "raw" }] },
  };
  const views: [string, ConsolePage, Partial<PageContext>, Record<string, Answer>][] = [
    ["keys", credentialsPage, {}, { "GET /api/credentials": { status: 200, body: [key(1)] } }],
    ["people", peopleGroupsPage, {}, { "GET /api/principals": { status: 200, body: [{ id: "oidc/a", label: null, grants: [{ scope: "*", tokens: ["*"], expires: null }] }] }, "GET /api/groups": { status: 200, body: [] } }],
    [
      "a group",
      peopleGroupsPage,
      { subpath: "/groups/ops" },
      {
        "GET /api/groups/ops/members": { status: 200, body: [{ id: "oidc/a" }] },
        "GET /api/groups/ops": { status: 200, body: { name: "ops", label: null, grants: [{ scope: "*", tokens: ["manage:read"], expires: null }], members: 1 } },
      },
    ],
    [
      "repositories",
      repositoriesPage,
      {},
      {
        "GET /api/repositories": { status: 200, body: [{ name: "default", format: "raw", retention: null }] },
        "GET /api/formats": { status: 200, body: [{ name: "raw", label: "raw (files)", proxy: true }] },
        "GET /api/rate-limits": { status: 200, body: { default: 6000, tenants: [{ tenant: "default", requestsPerMinute: 10 }] } },
      },
    ],
    ["a repository, Deploy on", repositoriesPage, { subpath: "/default", options: { deployEnabled: true, publicBaseUrl: "" } }, repoDetail],
    ["webhooks", webhooksPage, {}, { "GET /api/webhooks/deliveries": { status: 200, body: [{ id: "d1", endpoint: "https://h/…", event: "x", state: "set-aside", attempts: 3, lastError: "503", created: new Date().toISOString() }] }, "GET /api/webhooks/endpoints": { status: 200, body: [] } }],
    ["screening", screeningPage, {}, lists()],
  ];

  it.each(views)("sees no Issue, Revoke, Grant, Create, Remove or other changing form on %s, and the administrator does", async (_what, page, over, routes) => {
    // The "Use a managing key" mode stays: its forms act with a pasted key's rights, not the person's, and show only once one is pasted.
    const asViewer = text(await page.get(fakeCtx(routes, { ...over, ...viewer }).ctx)).replace(/<section aria-labelledby="pasted-heading">[\s\S]*?<\/section>/, "");
    expect(asViewer).not.toMatch(POSTING);
    expect(asViewer).not.toMatch(/<button[^>]*>(Issue|Revoke|Grant|Create|Remove|Delete|Add|Save|Set|Send|Release|Discard|Deploy)/);
    expect(asViewer).not.toContain('id="deploy-form"');
    const asAdmin = text(await page.get(fakeCtx(routes, over).ctx));
    expect(asAdmin).toMatch(/<form method="(post|get)"[^>]*>|id="deploy-form"/);
  });

  it("sees the keys but no Issue section, and the confirmation page refuses to offer a revoke", async () => {
    const out = text(await credentialsPage.get(fakeCtx({ "GET /api/credentials": { status: 200, body: [key(1)] } }, viewer).ctx));
    expect(out).toContain("key 1");
    expect(out).not.toContain("Issue a key");
    expect(out).not.toContain("/ui/credentials/revoke");
    const k = key(2);
    const confirm = fakeCtx({ [`GET /api/credentials/${k.id}`]: { status: 200, body: k } }, { ...viewer, subpath: "/revoke", query: { id: k.id } });
    await expect(credentialsPage.get(confirm.ctx)).rejects.toMatchObject({ status: 403 });
  });
});

