import { html, type Html } from "./html.js";
import { ApiRefusal, expectOk, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { PAGE_SIZE, actionForm, afterChange, field, grantText, listPage, pager, when } from "./page-widgets.js";
import { grantKeyForm, keyActions, keyName, keyOf, keyPath, keyView, secretOnce, type Credential } from "./credential-view.js";

const BASE = "/ui/credentials";
const CONFIRM = `${BASE}/revoke`;
const KEY_ID = /^[0-9a-f]{64}$/;
/** The window the page marks and filters by: a key lapsing unnoticed breaks a build. */
const SOON = "P14D";

function credentialRows(ctx: PageContext, items: Credential[]) {
  return items.map(
    (c) => html`<tr>
      <td><a href="${keyPath(c.id)}">${c.label ?? html`<em>no label</em>`}</a>${c.owner ? html`<br><small class="key-owner">personal key of <code>${c.owner}</code></small>` : ""}</td>
      <td><code title="${c.id}">${c.id.slice(0, 12)}</code></td>
      <td>${when(c.created)}</td>
      <td>${when(c.expires)}${c.expiringSoon ? html` <strong class="badge warning">expires within 14 days</strong>` : ""}</td>
      <td>${c.state}</td>
      <td>${c.grants.length ? html`<ul>${c.grants.map((g) => html`<li>${grantText(g)}</li>`)}</ul>` : html`<em>none</em>`}</td>
      <td>${c.allowedAddresses.join(", ") || "any"}</td>
      <td>${c.state === "revoked" || !ctx.may("manage:write") ? "" : revokeButton(c)}</td>
    </tr>`,
  );
}

/**
 * Revoke leads to a confirmation page (a plain GET form, so it works without JavaScript); only
 * that page's form posts the revoke.
 */
function revokeButton(c: Credential): Html {
  return html`<form method="get" action="${CONFIRM}" class="action"><input type="hidden" name="id" value="${c.id}"><button type="submit">Revoke…</button></form>`;
}


/** The confirmation page: names the key, and warns loudly when it is the bootstrap key. */
async function confirmRevoke(ctx: PageContext): Promise<PageOutcome> {
  const id = ctx.query.id ?? "";
  if (!KEY_ID.test(id)) return { kind: "redirect", location: BASE, notice: "Not done: no such key" };
  if (!ctx.may("manage:write")) throw new ApiRefusal(403, "Revoking a key needs manage:write on *, which you do not hold.");
  const c = expectOk(await ctx.api<Credential>("GET", `/api/credentials/${id}`));
  const back = html`<p><a href="${BASE}">Cancel: keep the key</a></p>`;
  if (c.state === "revoked") return { kind: "html", title: "Revoke a key", main: html`<p>The key ${keyName(c)} is revoked already.</p>${back}` };
  const main = html`
    <section aria-labelledby="confirm-heading" id="confirm-revoke">
      <h2 id="confirm-heading">Revoke the key ${keyName(c)}?</h2>
      ${
        c.bootstrap
          ? html`<p class="problem" role="alert" id="bootstrap-warning"><strong>This is the bootstrap key.</strong> It holds every right on every repository;
              whatever still uses it (scripts, the first administrator, automation) stops working at once. Issue and grant another managing key first.
              While <code>svc.bootstrap-key</code> is set, the next start of the auth service brings it back.</p>`
          : ""
      }
      <dl><dt>Label</dt><dd>${c.label ?? html`<em>no label</em>`}</dd><dt>Id</dt><dd><code>${c.id}</code></dd><dt>Expires</dt><dd>${when(c.expires)}</dd>
        <dt>Grants</dt><dd>${c.grants.length ? c.grants.map(grantText).join("; ") : html`<em>none</em>`}</dd></dl>
      <p>Every request made with it is refused from now on; a revoked key cannot be brought back.</p>
      ${actionForm(ctx, { to: BASE, action: "revoke", button: `Revoke ${c.bootstrap ? "the bootstrap key" : `key ${c.label ?? c.id.slice(0, 12)}`}`, fields: { id: c.id }, className: "action danger" })}
      ${back}
    </section>`;
  return { kind: "html", title: "Revoke a key", main };
}

/**
 * Credentials: the signed-in administrator lists, issues and revokes keys through the API as
 * themselves; a second mode (credentials.js) does the same with a managing key pasted into the
 * page, which stays in that script's memory only.
 */
export const credentialsPage: ConsolePage = {
  slug: "credentials",
  nav: "Credentials",
  needs: "manage:read on * (manage:write to issue or revoke keys)",

  async get(ctx) {
    if (ctx.subpath === "/revoke") return confirmRevoke(ctx);
    const id = keyOf(ctx.subpath);
    if (id) return keyView(ctx, id);
    const expiringOnly = ctx.query.expiring === "soon";
    const owner = ctx.query.owner || undefined;
    const page = await listPage<Credential>(ctx, "/api/credentials", { limit: String(PAGE_SIZE), after: ctx.query.after, expiring: expiringOnly ? SOON : undefined, owner });
    const issue = html`
      <section aria-labelledby="issue-heading">
        <h2 id="issue-heading">Issue a key</h2>
        ${actionForm(ctx, {
          to: BASE,
          action: "issue",
          button: "Issue key",
          controls: html`${field({ id: "issue-label", name: "label", label: "Label", placeholder: "ci for project x" })}${field({
            id: "issue-expires",
            name: "expires",
            label: "Expires",
            placeholder: "P30D",
            hint: "an ISO-8601 duration or an instant; blank: the default lifetime",
          })}`,
        })}
        <p>A new key holds no rights until granted: the next page grants them. Each key's page (its label in the list) grants and removes rights, and changes its expiry, source addresses and rotation.</p>
      </section>`;
    const main = html`
      ${ctx.may("manage:write") ? issue : ""}
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">${owner ? html`Personal keys of <code>${owner}</code>` : "Keys"}</h2>
        <p><a href="${BASE}"${expiringOnly ? "" : html` aria-current="page"`}>All keys</a> ·
          <a href="${BASE}?expiring=soon"${expiringOnly ? html` aria-current="page"` : ""}>Expiring within 14 days</a></p>
        <table class="list" id="credentials">
          <thead><tr><th scope="col">Label</th><th scope="col">Id</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">State</th><th scope="col">Grants</th><th scope="col">Addresses</th><th scope="col">Revoke</th></tr></thead>
          <tbody>${page.items.length ? credentialRows(ctx, page.items) : html`<tr><td colspan="8">No keys${expiringOnly ? " expiring within 14 days" : ""}.</td></tr>`}</tbody>
        </table>
        ${pager({ base: BASE, param: "after", current: ctx.query.after, next: page.next, keep: { expiring: expiringOnly ? "soon" : undefined, owner }, label: "keys" })}
      </section>
      <section aria-labelledby="pasted-heading">
        <h2 id="pasted-heading">Use a managing key</h2>
        <p>Manage keys with another key that holds <code>manage:*</code> on <code>*</code>, pasted here. It stays in this page's memory only:
          it is never sent to the console, stored or logged, and it is gone when you leave or reload the page.</p>
        <form id="managing-key-form" autocomplete="off">
          <p class="field"><label for="managing-key">Managing key</label> <input id="managing-key" type="password" autocomplete="off" spellcheck="false" required></p>
          <button type="submit">Use this key</button>
        </form>
        <div id="key-mode" hidden>
          <p><span id="key-mode-status" role="status"></span> <button type="button" id="key-mode-forget">Forget the key</button></p>
          <form id="key-mode-issue">
            <p class="field"><label for="key-mode-label">Label</label> <input id="key-mode-label" type="text"></p>
            <button type="submit">Issue key with the managing key</button>
          </form>
          <table class="list" id="key-mode-list">
            <thead><tr><th scope="col">Label</th><th scope="col">Id</th><th scope="col">Expires</th><th scope="col">State</th><th scope="col">Revoke</th></tr></thead>
            <tbody></tbody>
          </table>
          <button type="button" id="key-mode-next" hidden>Next page of keys</button>
        </div>
      </section>`;
    return { kind: "html", title: "Credentials", main, scripts: ["credentials.js"] };
  },

  actions: {
    ...keyActions,
    async issue(ctx) {
      const body: Record<string, string> = {};
      if (ctx.form.label?.trim()) body.label = ctx.form.label.trim();
      if (ctx.form.expires?.trim()) body.expires = ctx.form.expires.trim();
      const result = await ctx.api<{ id: string; key: string; label: string | null; expires: string | null }>("POST", "/api/credentials", body);
      if (result.status === 400) return afterChange(result, BASE, "");
      const minted = expectOk(result);
      // Answered here, never through a redirect's notice: the secret exists only in this one answer.
      // Straight on to granting it: a key holds nothing until it is granted.
      const main = html`
        <section aria-labelledby="issued-heading">
          <h2 id="issued-heading">Key issued</h2>
          ${secretOnce(minted)}
        </section>
        <section aria-labelledby="issued-grant-heading" id="issued-grant">
          <h2 id="issued-grant-heading">Grant it rights</h2>
          <p>It holds no rights yet. Grant it the least it needs: the one repository it works with (and a path prefix when it publishes only there).</p>
          ${grantKeyForm(ctx, minted.id, "issued-grant")}
          <p><a href="${keyPath(minted.id)}" id="issued-key-page">The key's page</a> (grants, expiry, source addresses, rotation) · <a href="${BASE}">Back to the keys</a></p>
        </section>`;
      return { kind: "html", title: "Credentials", main, notice: "Key issued", scripts: ["credentials.js"] };
    },

    async revoke(ctx) {
      const id = ctx.form.id ?? "";
      if (!KEY_ID.test(id)) return { kind: "redirect", location: BASE, notice: "Not done: no such key" };
      return afterChange(await ctx.api("DELETE", `/api/credentials/${id}`), BASE, `Key ${id.slice(0, 12)} revoked`);
    },
  },
};
