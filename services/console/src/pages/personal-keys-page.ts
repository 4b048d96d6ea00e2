import { html, type Html } from "./html.js";
import { expectOk, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { afterChange, csrfInput, field, grantText, inputRefusal, listPage, pager, readTokens, when, PAGE_SIZE, type GrantView } from "./page-widgets.js";
import { secretOnce, type Credential } from "./credential-view.js";
import type { MeGrant } from "../views/screens.js";

const BASE = "/ui/my-keys";
const KEY_ID = /^[0-9a-f]{64}$/;

/** A form any signed-in person may post: personal keys need no manage right (the API decides). */
function ownForm(ctx: PageContext, opts: { action: string; button: string; fields?: Record<string, string>; controls?: Html; id?: string; className?: string }): Html {
  const hidden = Object.entries(opts.fields ?? {}).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return html`<form method="post" action="${BASE}" class="${opts.className ?? "action"}"${opts.id ? html` id="${opts.id}"` : ""}>${csrfInput(ctx)}<input type="hidden" name="_action" value="${opts.action}">${hidden}${opts.controls ?? ""}<button type="submit">${opts.button}</button></form>`;
}

function mintForm(ctx: PageContext, rights: MeGrant[]): Html {
  const held = rights.length
    ? html`<ul id="held-rights">${rights.map((g) => html`<li><code>${grantText(g)}</code></li>`)}</ul>`
    : html`<p id="held-rights"><em>You hold no rights yet, so a key would hold none.</em></p>`;
  return html`<section aria-labelledby="mint-heading">
    <h2 id="mint-heading">Mint a personal key</h2>
    <p>A personal key works for you in build tools and clients (npm, Maven, pip, <code>svc</code>). It holds the rights you choose here, never more than
      you hold yourself: when you lose a right (yours or your group's), your keys lose it too, at once; when you are removed, they stop working.</p>
    <p>You hold now:</p>${held}
    ${ownForm(ctx, {
      action: "mint",
      button: "Mint key",
      id: "mint-form",
      controls: html`${field({ id: "mint-label", name: "label", label: "Label", placeholder: "laptop npm" })}
        <fieldset><legend>Rights</legend>
          <p><input type="radio" id="mint-all" name="rights" value="all" checked> <label for="mint-all">All my rights (as they change)</label></p>
          <p><input type="radio" id="mint-some" name="rights" value="some"> <label for="mint-some">Only these:</label></p>
          ${field({ id: "mint-scope", name: "scope", label: "Scope", placeholder: "a repository, * or <repository>:<path prefix>" })}
          ${field({ id: "mint-tokens", name: "tokens", label: "Rights", placeholder: "repository:read", hint: "right tokens or a role (read-only, deploy), separated by commas" })}
        </fieldset>
        ${field({ id: "mint-expires", name: "expires", label: "Expires", placeholder: "P30D", hint: "an ISO-8601 duration or an instant; blank: the default lifetime" })}`,
    })}
  </section>`;
}

function keyRows(ctx: PageContext, items: Credential[]): Html[] {
  return items.map(
    (c) => html`<tr>
      <td>${c.label ?? html`<em>no label</em>`}</td>
      <td><code title="${c.id}">${c.id.slice(0, 12)}</code></td>
      <td>${when(c.created)}</td>
      <td>${when(c.expires)}</td>
      <td>${c.state}</td>
      <td>${c.grants.length ? html`<ul>${c.grants.map((g) => html`<li>${grantText(g)}</li>`)}</ul>` : html`<em>none</em>`}</td>
      <td>${c.state === "revoked" ? "" : html`<form method="get" action="${BASE}/revoke" class="action"><input type="hidden" name="id" value="${c.id}"><button type="submit">Revoke…</button></form>`}</td>
    </tr>`,
  );
}

/** Each of the person's keys, page after page (a person has few). */
async function ownKeys(ctx: PageContext): Promise<Credential[]> {
  const all: Credential[] = [];
  let after: string | undefined;
  do {
    const page = await listPage<Credential>(ctx, "/api/me/credentials", { limit: "500", after });
    all.push(...page.items);
    after = page.next ?? undefined;
  } while (after);
  return all;
}

/** Revoke… leads here (a plain GET form): the key named, and only this page's form revokes it. */
async function confirmRevoke(ctx: PageContext): Promise<PageOutcome> {
  const id = ctx.query.id ?? "";
  const c = KEY_ID.test(id) ? (await ownKeys(ctx)).find((k) => k.id === id) : undefined;
  if (!c) return { kind: "redirect", location: BASE, notice: "Not done: you have no such key" };
  const back = html`<p><a href="${BASE}">Cancel: keep the key</a></p>`;
  if (c.state === "revoked") return { kind: "html", title: "Your keys", main: html`<p>Your key ${c.label ?? c.id.slice(0, 12)} is revoked already.</p>${back}` };
  const name = c.label ?? c.id.slice(0, 12);
  const main = html`
    <section aria-labelledby="confirm-heading" id="confirm-revoke">
      <h2 id="confirm-heading">Revoke your key “${name}”?</h2>
      <dl><dt>Label</dt><dd>${c.label ?? html`<em>no label</em>`}</dd><dt>Id</dt><dd><code>${c.id}</code></dd><dt>Expires</dt><dd>${when(c.expires)}</dd>
        <dt>Rights chosen</dt><dd>${c.grants.length ? c.grants.map(grantText).join("; ") : html`<em>none</em>`}</dd></dl>
      <p>Whatever uses it (a build tool's configuration, <code>svc</code>) is refused from now on; a revoked key cannot be brought back.</p>
      ${ownForm(ctx, { action: "revoke", button: `Revoke key ${name}`, fields: { id: c.id }, className: "action danger" })}
      ${back}
    </section>`;
  return { kind: "html", title: "Your keys", main };
}

/**
 * Your keys (`/ui/my-keys`): any signed-in person mints, lists and revokes their own personal
 * keys through `/api/me/credentials` (docs/administration/credentials.md, "Personal keys"),
 * holding no manage right. Administrators find everyone's on the Credentials page.
 */
export const personalKeysPage: ConsolePage = {
  slug: "my-keys",
  nav: "Your keys",
  needs: "a signed-in person (no right is needed for your own keys)",

  async get(ctx) {
    if (ctx.subpath === "/revoke") return confirmRevoke(ctx);
    const [me, page] = await Promise.all([
      ctx.api<{ grants: MeGrant[] }>("GET", "/api/me"),
      listPage<Credential>(ctx, "/api/me/credentials", { limit: String(PAGE_SIZE), after: ctx.query.after }),
    ]);
    const main = html`
      ${mintForm(ctx, expectOk(me).grants)}
      <section aria-labelledby="my-keys-heading">
        <h2 id="my-keys-heading">Your keys</h2>
        <table class="list" id="my-keys">
          <thead><tr><th scope="col">Label</th><th scope="col">Id</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">State</th><th scope="col">Rights chosen</th><th scope="col">Revoke</th></tr></thead>
          <tbody>${page.items.length ? keyRows(ctx, page.items) : html`<tr><td colspan="7">You have no personal keys.</td></tr>`}</tbody>
        </table>
        ${pager({ base: BASE, param: "after", current: ctx.query.after, next: page.next, label: "keys" })}
      </section>`;
    return { kind: "html", title: "Your keys", main, scripts: ["credentials.js"] };
  },

  actions: {
    async mint(ctx) {
      const body: Record<string, unknown> = {};
      if (ctx.form.label?.trim()) body.label = ctx.form.label.trim();
      if (ctx.form.expires?.trim()) body.expires = ctx.form.expires.trim();
      if (ctx.form.rights === "some") body.grants = [{ scope: ctx.form.scope?.trim() ?? "", tokens: readTokens(ctx.form.tokens) }];
      else body.all = true;
      const result = await ctx.api<{ id: string; key: string; label: string | null; expires: string | null; grants: Omit<GrantView, "expires">[] }>("POST", "/api/me/credentials", body);
      // A right the person does not hold is theirs to correct, not a page to leave by.
      if (result.status === 403 || inputRefusal(result) !== undefined) {
        const b = (result.body ?? {}) as { detail?: string; title?: string };
        return { kind: "redirect", location: BASE, notice: `Not done: ${b.detail ?? b.title ?? `HTTP ${result.status}`}` };
      }
      const minted = expectOk(result);
      // Answered here, never through a redirect's notice: the secret exists only in this one answer.
      const main = html`
        <section aria-labelledby="minted-heading">
          <h2 id="minted-heading">Personal key minted</h2>
          ${secretOnce(minted)}
          <p>Rights chosen: <span id="minted-rights">${minted.grants.map((g) => `${g.scope}: ${g.tokens.join(", ")}`).join("; ")}</span> (never more than you hold).</p>
          <p><a href="${BASE}">Back to your keys</a></p>
        </section>`;
      return { kind: "html", title: "Your keys", main, notice: "Personal key minted", scripts: ["credentials.js"] };
    },

    async revoke(ctx) {
      const id = ctx.form.id ?? "";
      if (!KEY_ID.test(id)) return { kind: "redirect", location: BASE, notice: "Not done: no such key" };
      return afterChange(await ctx.api("DELETE", `/api/me/credentials/${id}`), BASE, `Key ${id.slice(0, 12)} revoked`);
    },
  },
};
