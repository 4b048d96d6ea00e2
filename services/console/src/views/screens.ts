import { html, type Html } from "../pages/html.js";

/** The console's own screens (sign-in, home, refusals, failures); the layout wraps each. */

export interface ProviderButton {
  href: string;
  label: string;
}

export function signInScreen(opts: { providers: ProviderButton[]; dev: boolean; problem?: string }): Html {
  const problem = opts.problem ? html`<p class="problem" role="alert">${opts.problem}</p>` : "";
  if (opts.providers.length === 0 && !opts.dev) {
    return html`${problem}<section class="disabled" aria-labelledby="disabled-h">
<h2 id="disabled-h">Sign-in is disabled</h2>
<p>No identity provider is configured, so nobody can sign in to the console. An operator enables one of these (see the console's administration guide):</p>
<ul>
<li>OpenID Connect: <code>svc.ui.oidc.issuer-uri</code>, <code>svc.ui.oidc.client-id</code> and <code>svc.ui.oidc.client-secret</code> (button label <code>svc.ui.oidc.name</code>);</li>
<li>an OAuth provider app (GitHub by default): <code>svc.ui.oauth.client-id</code> and <code>svc.ui.oauth.client-secret</code>.</li>
</ul>
<p>Scripts and build tools keep working with keys meanwhile.</p>
</section>`;
  }
  return html`${problem}<ul class="providers">
${opts.providers.map((p) => html`<li><a class="button" href="${p.href}">Sign in with ${p.label}</a></li>`)}
${opts.dev ? html`<li><a class="button" href="/login/dev">Sign in with a dev-profile account</a></li>` : ""}
</ul>`;
}

export function devSignInScreen(opts: { csrf: string; problem?: string }): Html {
  return html`${opts.problem ? html`<p class="problem" role="alert">${opts.problem}</p>` : ""}
<p>The dev profile's built-in accounts: <code>admin</code> (administration) and <code>viewer</code> (read only), each with its own name as password. This form exists only under <code>svc.profile=dev</code>.</p>
<form method="post" action="/login/dev" class="stack">
<input type="hidden" name="_csrf" value="${opts.csrf}">
<label for="username">Account</label>
<input id="username" name="username" autocomplete="username" required>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`;
}

export interface MeGrant {
  scope: string;
  tokens: string[];
  expires: string | null;
  via: string;
}

export function homeScreen(me: { id: string; grants: MeGrant[] }): Html {
  return html`<p>You are signed in as <code>${me.id}</code>. What you may see and do comes from these rights, read again on every page:</p>
<table id="your-rights">
<caption>Your rights</caption>
<thead><tr><th scope="col">Scope</th><th scope="col">Rights</th><th scope="col">Held</th><th scope="col">Expires</th></tr></thead>
<tbody>
${me.grants.map((g) => html`<tr><td><code>${g.scope}</code></td><td>${g.tokens.join(", ")}</td><td>${g.via === "direct" ? "directly" : g.via.startsWith("group:") ? `through group ${g.via.slice(6)}` : g.via}</td><td>${g.expires ?? "never"}</td></tr>`)}
</tbody>
</table>
<p><a href="/ui/my-keys" id="my-keys-link">Your keys</a>: mint personal keys for npm, Maven, pip or <code>svc</code>, holding some or all of these rights.</p>`;
}

export function noAccessScreen(personId: string): Html {
  return html`<section class="no-access" aria-labelledby="no-access-h">
<h2 id="no-access-h">You hold no rights yet</h2>
<p>You are signed in, but nobody has granted this id anything. Hand it to an administrator, who grants you rights (directly or through a group); then reload this page.</p>
<p class="copyable"><code id="person-id">${personId}</code> <button type="button" class="copy" data-copy="person-id">Copy id</button></p>
</section>`;
}

export function forbiddenScreen(reason: string, needs: string | undefined): Html {
  return html`<p class="problem" role="alert">${reason}</p>
${needs ? html`<p>This page needs <strong>${needs}</strong>. Ask an administrator for it, quoting your id shown at the top.</p>` : ""}
<p><a href="/ui/">Back to your home page</a></p>`;
}

export function notFoundScreen(what: string): Html {
  return html`<p>${what}</p><p><a href="/ui/">Back to your home page</a></p>`;
}

export function failureScreen(reference: string): Html {
  return html`<p class="problem" role="alert">Something went wrong on the server while answering this page. Nothing you did caused it.</p>
<p>Quote this reference to an administrator: it names the failure in the server's log.</p>
<p class="copyable"><code id="failure-reference">${reference}</code> <button type="button" class="copy" data-copy="failure-reference">Copy reference</button></p>
<p><a href="/ui/">Back to your home page</a></p>`;
}

export function plainProblemScreen(text: string, link?: { href: string; label: string }): Html {
  return html`<p class="problem" role="alert">${text}</p>${link ? html`<p><a href="${link.href}">${link.label}</a></p>` : ""}`;
}
