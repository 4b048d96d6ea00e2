import { html, type Html } from "./html.js";
import { expectOk, type PageContext, type PageOutcome } from "./page-contract.js";
import { actionForm, afterChange, field, grantText, inputRefusal, when, type GrantView } from "./page-widgets.js";
import { grantBody, grantControls, grantList, grantScope } from "./grant-forms.js";

/**
 * One key's page on the Credentials page (`/ui/credentials/<id>`): what it is, its grants with
 * the form that grants it more (the one people and groups are granted with) and a Remove on
 * each, its expiry, its source-address allowlist, rotation and revocation: each through the
 * credentials API's own route (docs/administration/credentials.md), so its checks and messages
 * are the ones a person sees. Forms only for a person holding manage:write.
 */

export interface Credential {
  id: string;
  label: string | null;
  created: string;
  expires: string | null;
  state: string;
  expiringSoon?: boolean;
  allowedAddresses: string[];
  grants: GrantView[];
  /** The key svc.bootstrap-key provisions. */
  bootstrap?: boolean;
  /** A personal key's person (/ui/my-keys); null for a key an administrator issued. */
  owner?: string | null;
  lastUsed?: string | null;
  lastUsedFrom?: string | null;
}

interface Minted {
  id: string;
  key: string;
  label: string | null;
  expires: string | null;
  predecessor?: { id: string; expires: string | null };
}

export const CREDENTIALS = "/ui/credentials";
const KEY_PATH = /^\/([0-9a-f]{64})$/;
export const keyPath = (id: string) => `${CREDENTIALS}/${id}`;
/** The key a `/ui/credentials/<id>` path names, or undefined. */
export const keyOf = (subpath: string): string | undefined => KEY_PATH.exec(subpath)?.[1];
export const keyName = (c: Pick<Credential, "label" | "id">) => (c.label ? `“${c.label}”` : `${c.id.slice(0, 12)} (no label)`);

/** The grant form of a key: on its page, and on the page that shows a key just issued. */
export function grantKeyForm(ctx: PageContext, id: string, idPrefix: string): Html | "" {
  return actionForm(ctx, { to: keyPath(id), action: "grant", button: "Grant", controls: grantControls(idPrefix) });
}

/** A key's page. */
export async function keyView(ctx: PageContext, id: string): Promise<PageOutcome> {
  const res = await ctx.api<Credential>("GET", `/api/credentials/${id}`);
  if (res.status === 404) return { kind: "redirect", location: CREDENTIALS, notice: "Not done: no such key" };
  const c = expectOk(res);
  const here = keyPath(id);
  const live = c.state === "active";
  const writer = ctx.may("manage:write");
  const about = html`<section aria-labelledby="key-heading">
    <h2 id="key-heading">Key ${keyName(c)}</h2>
    <dl id="key-about">
      <dt>Id</dt><dd><code>${c.id}</code></dd>
      <dt>State</dt><dd id="key-state">${c.state}${c.bootstrap ? " (the bootstrap key)" : ""}</dd>
      ${c.owner ? html`<dt>Personal key of</dt><dd id="key-owner"><code>${c.owner}</code>: it holds at most what they hold, and stops when they are removed</dd>` : ""}
      <dt>Created</dt><dd>${when(c.created)}</dd>
      <dt>Expires</dt><dd id="key-expires">${when(c.expires)}${c.expiringSoon ? html` <strong class="badge warning">expires within 14 days</strong>` : ""}</dd>
      <dt>Source addresses</dt><dd id="key-addresses">${c.allowedAddresses.join(", ") || "any"}</dd>
      ${c.lastUsed !== undefined ? html`<dt>Last used</dt><dd>${when(c.lastUsed)}${c.lastUsedFrom ? ` from ${c.lastUsedFrom}` : ""}</dd>` : ""}
    </dl>
    ${live ? "" : html`<p>${/^[aeiou]/.test(c.state) ? "An" : "A"} ${c.state} key is final: it cannot be granted, changed or rotated.</p>`}
  </section>`;
  const grants = html`<section aria-labelledby="key-grants-heading" id="key-grants">
    <h2 id="key-grants-heading">Grants</h2>
    ${live ? grantList(ctx, c.grants, here, "remove-grant", {}) : c.grants.length ? html`<ul>${c.grants.map((g) => html`<li>${grantText(g)}</li>`)}</ul>` : html`<em>none</em>`}
    ${
      live && writer
        ? html`<h3>Grant this key rights</h3>
      <p>Grant it the least it needs: the one repository it works with, and a path prefix when it publishes only there. A client that cannot send
        <code>Service-Repository-Name</code> (npm, pnpm, yarn, pip, twine) needs the repository's “Authorise by the path”, never a grant on <code>*</code>.</p>
      ${grantKeyForm(ctx, id, "key-grant")}`
        : ""
    }
  </section>`;
  const changes =
    live && writer
      ? html`<section aria-labelledby="key-expiry-heading" id="key-expiry">
    <h2 id="key-expiry-heading">Expiry</h2>
    ${actionForm(ctx, {
      to: here,
      action: "set-expiry",
      button: "Save expiry",
      controls: field({ id: "key-expires-at", name: "expires", label: "Expires", value: c.expires ?? "", placeholder: "P90D", hint: "a duration from now or an instant; blank: no expiry (within svc.credential-max-lifetime)" }),
    })}
  </section>
  <section aria-labelledby="key-allowlist-heading" id="key-allowlist">
    <h2 id="key-allowlist-heading">Source addresses</h2>
    ${actionForm(ctx, {
      to: here,
      action: "set-allowlist",
      button: "Save addresses",
      controls: field({ id: "key-allowed", name: "addresses", label: "Allowed from", value: c.allowedAddresses.join(", "), placeholder: "10.0.0.0/8, 2001:db8::/32", hint: "addresses and CIDRs, separated by commas; blank: any address" }),
    })}
  </section>
  <section aria-labelledby="key-rotate-heading" id="key-rotate">
    <h2 id="key-rotate-heading">Rotate</h2>
    <p>Issues a successor with the same label, grants and addresses; this key keeps working until the overlap ends, never longer than it would have.</p>
    ${actionForm(ctx, { to: here, action: "rotate", button: "Rotate key", controls: field({ id: "key-overlap", name: "overlap", label: "Overlap", placeholder: "P7D", hint: "how long both keys work; blank: P7D; PT0S ends this key at once" }) })}
  </section>
  <section aria-labelledby="key-revoke-heading" id="key-revoke">
    <h2 id="key-revoke-heading">Revoke</h2>
    <form method="get" action="${CREDENTIALS}/revoke" class="action"><input type="hidden" name="id" value="${c.id}"><button type="submit">Revoke…</button></form>
  </section>`
      : "";
  return { kind: "html", title: `Key ${c.label ?? c.id.slice(0, 12)}`, main: html`<p><a href="${CREDENTIALS}">All keys</a></p>${about}${grants}${changes}` };
}

/** A secret shown once, with its copy button: a key just issued or rotated. */
export function secretOnce(m: Minted): Html {
  return html`<p>Copy the key now: it is shown once and cannot be shown again (only its hash is stored).</p>
    <p class="field"><label for="issued-key">Key</label> <input id="issued-key" type="text" readonly value="${m.key}" size="70">
      <button type="button" data-copy="issued-key">Copy</button> <span role="status" data-copied-for="issued-key"></span></p>
    <dl><dt>Id</dt><dd><code>${m.id}</code></dd><dt>Label</dt><dd>${m.label ?? "none"}</dd><dt>Expires</dt><dd>${when(m.expires)}</dd></dl>`;
}

/** The key a form on `/ui/credentials/<id>` acts on; undefined sends the person back to the list. */
const target = (ctx: PageContext) => keyOf(ctx.subpath);
const noKey: PageOutcome = { kind: "redirect", location: CREDENTIALS, notice: "Not done: no such key" };

/** The form posts of a key's page. */
export const keyActions: Record<string, (ctx: PageContext) => Promise<PageOutcome>> = {
  async grant(ctx) {
    const id = target(ctx);
    if (!id) return noKey;
    return afterChange(await ctx.api("POST", `/api/credentials/${id}/grants`, grantBody(ctx.form)), keyPath(id), `Granted the key rights at ${grantScope(ctx.form)}`);
  },
  async "remove-grant"(ctx) {
    const id = target(ctx);
    if (!id) return noKey;
    const scope = ctx.form.scope ?? "";
    return afterChange(await ctx.api("DELETE", `/api/credentials/${id}/grants/${encodeURIComponent(scope)}`), keyPath(id), `Removed the key's rights at ${scope}`);
  },
  async "set-expiry"(ctx) {
    const id = target(ctx);
    if (!id) return noKey;
    const res = await ctx.api<Credential>("PUT", `/api/credentials/${id}/expiry`, { expires: (ctx.form.expires ?? "").trim() || null });
    const why = inputRefusal(res);
    if (why !== undefined) return { kind: "redirect", location: keyPath(id), notice: `Not done: ${why}` };
    return { kind: "redirect", location: keyPath(id), notice: `Expiry set: ${when(expectOk(res).expires)}` };
  },
  async "set-allowlist"(ctx) {
    const id = target(ctx);
    if (!id) return noKey;
    const res = await ctx.api<Credential>("PUT", `/api/credentials/${id}/allowed-ips`, { addresses: (ctx.form.addresses ?? "").trim() || null });
    const why = inputRefusal(res);
    if (why !== undefined) return { kind: "redirect", location: keyPath(id), notice: `Not done: ${why}` };
    return { kind: "redirect", location: keyPath(id), notice: `Source addresses: ${expectOk(res).allowedAddresses.join(", ") || "any"}` };
  },
  async rotate(ctx) {
    const id = target(ctx);
    if (!id) return noKey;
    const overlap = (ctx.form.overlap ?? "").trim();
    const res = await ctx.api<Minted>("POST", `/api/credentials/${id}/rotate`, overlap ? { overlap } : {});
    const why = inputRefusal(res);
    if (why !== undefined) return { kind: "redirect", location: keyPath(id), notice: `Not done: ${why}` };
    const m = expectOk(res);
    // Answered here, never through a redirect's notice: the secret exists only in this one answer.
    const main = html`<section aria-labelledby="rotated-heading">
      <h2 id="rotated-heading">Key rotated</h2>
      ${secretOnce(m)}
      <p>The old key <code>${id.slice(0, 12)}</code> works until ${when(m.predecessor?.expires ?? null)}.</p>
      <p><a href="${keyPath(m.id)}" id="successor-link">The new key's page</a> · <a href="${CREDENTIALS}">Back to the keys</a></p>
    </section>`;
    return { kind: "html", title: "Credentials", main, notice: "Key rotated", scripts: ["credentials.js"] };
  },
};
