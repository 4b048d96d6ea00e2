import { html } from "./html.js";
import { expectOk, type ConsolePage, type PageContext, type PageOutcome } from "./page-contract.js";
import { csrfInput, field, when } from "./page-widgets.js";

const BASE = "/ui/cli-login";
const CODE = /^[A-Za-z0-9]{4}-?[A-Za-z0-9]{4}$/;

interface Login {
  code: string;
  client: "npm" | "svc";
  label: string | null;
  expires: string;
  confirmed: boolean;
}

const CLIENT_NAMES: Record<string, string> = { npm: "npm (npm login)", svc: "the svc command-line client (svc login)" };

function askForCode(ctx: PageContext, problem?: string): PageOutcome {
  const main = html`<section aria-labelledby="code-heading">
    <h2 id="code-heading">Sign in a command-line client</h2>
    ${problem ? html`<p class="problem" role="alert">${problem}</p>` : ""}
    <p>Type the code your terminal shows (<code>svc login</code> or <code>npm login</code>).</p>
    <form method="get" action="${BASE}" class="action">${field({ id: "login-code", name: "code", label: "Code", required: true, placeholder: "ABCD-EFGH", autocomplete: "off" })}<button type="submit">Continue</button></form>
  </section>`;
  return { kind: "html", title: "Sign in a command-line client", main };
}

/**
 * A command-line sign-in's confirmation (`/ui/cli-login?code=<code>`): npm's login URL and the
 * URL `svc login` prints lead here (through the sign-in when signed out: after-sign-in.ts). The
 * signed-in person confirms, and the client's next poll takes a new personal key holding all
 * their rights (the auth service's login-flow-service.ts). Any signed-in person: no right needed.
 */
export const cliLoginPage: ConsolePage = {
  slug: "cli-login",
  nav: "",
  needs: "a signed-in person (no right is needed)",

  async get(ctx) {
    const code = (ctx.query.code ?? "").trim().toUpperCase();
    if (code === "") return askForCode(ctx);
    if (!CODE.test(code)) return askForCode(ctx, "That is not a code a sign-in shows (four letters or digits, a dash, four more).");
    const res = await ctx.api<Login>("GET", `/api/me/logins/${encodeURIComponent(code)}`);
    if (res.status === 404) return askForCode(ctx, (res.body as { detail?: string })?.detail ?? "No sign-in is waiting with this code.");
    const login = expectOk(res);
    if (login.confirmed) return { kind: "html", title: "Signed in", main: html`<p id="login-done">This sign-in is confirmed already: go back to your terminal.</p>` };
    const main = html`<section aria-labelledby="confirm-login-heading" id="confirm-login">
      <h2 id="confirm-login-heading">Sign in ${CLIENT_NAMES[login.client] ?? login.client}?</h2>
      <p>Code <strong id="login-code-shown">${login.code}</strong>${login.label ? html` (${login.label})` : ""}: check it is the one your terminal shows. Waiting until ${when(login.expires)}.</p>
      <p>Confirming hands that client a new <a href="/ui/my-keys">personal key</a> of yours, <code>${ctx.person.id}</code>, holding all your rights,
        as they change (never more than you hold); it expires by the default lifetime, and you can revoke it on <a href="/ui/my-keys">Your keys</a>.
        If you did not start this sign-in yourself, do not confirm it.</p>
      <form method="post" action="${BASE}" class="action">${csrfInput(ctx)}<input type="hidden" name="_action" value="confirm"><input type="hidden" name="code" value="${login.code}"><button type="submit">Confirm sign-in</button></form>
    </section>`;
    return { kind: "html", title: "Sign in a command-line client", main };
  },

  actions: {
    async confirm(ctx) {
      const code = (ctx.form.code ?? "").trim().toUpperCase();
      if (!CODE.test(code)) return askForCode(ctx, "That is not a code a sign-in shows.");
      const res = await ctx.api("POST", `/api/me/logins/${encodeURIComponent(code)}`);
      if (res.status === 404) return askForCode(ctx, (res.body as { detail?: string })?.detail ?? "No sign-in is waiting with this code.");
      expectOk(res);
      return {
        kind: "html",
        title: "Signed in",
        notice: "Sign-in confirmed",
        main: html`<p id="login-done">Done: go back to your terminal, which receives its key in a moment. You can close this page.</p>`,
      };
    },
  },
};
