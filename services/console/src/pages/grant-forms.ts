import { html, type Html } from "./html.js";
import type { PageContext } from "./page-contract.js";
import { actionForm, field, grantText, readTokens, type GrantView } from "./page-widgets.js";

/**
 * The grant form and grant list the People and groups page and the Credentials page share: a
 * person, a group and a key are granted rights the same way (`{scope, tokens, expires?}` to
 * their API's grants route), and each grant is removed by its scope.
 */

/** Repository, path prefix, rights and expiry inputs of a grant form; `prefix` keeps the ids unique on the page. */
export function grantControls(prefix: string): Html {
  return html`${field({ id: `${prefix}-scope`, name: "scope", label: "Repository", required: true, placeholder: "* or a repository", hint: "* for every repository; a build cache's name for cache rights" })}${field({
    id: `${prefix}-prefix`,
    name: "prefix",
    label: "Path prefix",
    placeholder: "com/acme",
    hint: "optional: only paths at or under it, in that repository",
  })}${field({
    id: `${prefix}-tokens`,
    name: "tokens",
    label: "Rights",
    required: true,
    placeholder: "repository:read, cache:read",
    hint: "right tokens or a role (read-only, deploy, admin), separated by commas",
  })}${field({ id: `${prefix}-expires`, name: "expires", label: "Grant expires", placeholder: "P30D", hint: "optional: a duration or an instant" })}`;
}

/** Each grant with a Remove button posting `action` with `fields` and the grant's scope. */
export function grantList(ctx: PageContext, grants: GrantView[], to: string, action: string, fields: Record<string, string>): Html {
  if (grants.length === 0) return html`<em>none</em>`;
  return html`<ul>${grants.map((g) => html`<li>${grantText(g)} ${actionForm(ctx, { to, action, button: "Remove", fields: { ...fields, scope: g.scope } })}</li>`)}</ul>`;
}

/** The scope a grant form names: the repository, with `:<prefix>` when a path prefix was given. */
export function grantScope(form: Record<string, string>): string {
  const scope = (form.scope ?? "").trim();
  const prefix = (form.prefix ?? "").trim().replace(/^\/+/, "");
  return prefix ? `${scope}:${prefix}` : scope;
}

/** The grants route's body a grant form describes. */
export function grantBody(form: Record<string, string>) {
  return { scope: grantScope(form), tokens: readTokens(form.tokens), ...(form.expires?.trim() ? { expires: form.expires.trim() } : {}) };
}
