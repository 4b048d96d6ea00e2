import { html, raw, type Html } from "../pages/html.js";
import { PAGES } from "../pages/index.js";

/** Who is looking, for the header: absent on the sign-in and error pages of a visitor not signed in. */
export interface Viewer {
  personId: string;
  csrf: string;
  /** The number of security advisories; undefined when the person may not read the posture (or it did not answer). */
  advisories?: number;
  /** Whether the person may open the pages (manage:read over *): without it, no navigation to them. */
  seesPages: boolean;
}

export interface LayoutInput {
  title: string;
  main: Html;
  viewer?: Viewer;
  notice?: string;
  /** The page's slug, marked as the current navigation entry. */
  current?: string;
  /** File names under /ui/assets/pages/. */
  scripts?: string[];
}

function header(v: Viewer | undefined): Html {
  if (!v) return html`<header class="top"><span class="brand">Artifact repository</span></header>`;
  const count =
    v.advisories === undefined
      ? ""
      : html`<a class="advisories${v.advisories > 0 ? " raised" : ""}" href="/ui/posture">${v.advisories} ${v.advisories === 1 ? "security advisory" : "security advisories"}</a>`;
  return html`<header class="top">
  <a class="brand" href="/ui/">Artifact repository</a>
  <span class="who">Signed in as <code id="signed-in-id">${v.personId}</code></span>
  ${count}
  <form method="post" action="/logout" class="signout"><input type="hidden" name="_csrf" value="${v.csrf}"><button type="submit">Sign out</button></form>
</header>`;
}

/** How a page's notice begins when the API refused what a form asked (page-widgets.ts afterChange): shown as a problem, not a success. */
const REFUSED = "Not done:";

/** A whole console document: the header, the navigation, the notice and the page's content. */
export function layout(input: LayoutInput): Html {
  const v = input.viewer;
  const nav = v?.seesPages
    ? html`<nav aria-label="Console pages"><ul>
${PAGES.map((p) => html`<li><a href="/ui/${p.slug}"${p.slug === input.current ? raw(' aria-current="page"') : ""}>${p.nav}</a></li>`)}
</ul></nav>`
    : "";
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${v ? html`<meta name="csrf-token" content="${v.csrf}">` : ""}
<title>${input.title} · Artifact repository console</title>
<link rel="icon" href="/ui/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/assets/console.css">
</head>
<body>
<a class="skip" href="#main">Skip to the content</a>
${header(v)}
${nav}
<main id="main" tabindex="-1">
<h1>${input.title}</h1>
${input.notice ? html`<p class="${input.notice.startsWith(REFUSED) ? "notice problem" : "notice"}" role="status">${input.notice}</p>` : ""}
${input.main}
</main>
<script src="/ui/assets/console.js" defer></script>
${(input.scripts ?? []).map((s) => html`<script src="/ui/assets/pages/${s}" defer></script>`)}
</body>
</html>
`;
}
