import { html } from "./html.js";
import { expectOk, type ConsolePage } from "./page-contract.js";

interface Advisory {
  name: string;
  severity: "critical" | "warning";
  summary: string;
  why: string;
  setting: string;
  remedy: string;
  nodes?: string[];
}

/** Security posture: the advisory list as the API orders it (most severe first), each with why it matters and the setting that clears it. */
export const posturePage: ConsolePage = {
  slug: "posture",
  nav: "Posture",
  needs: "manage:read on *",
  async get(ctx) {
    const { advisories } = expectOk(await ctx.api<{ count: number; advisories: Advisory[] }>("GET", "/api/posture"));
    if (advisories.length === 0) {
      return { kind: "html", title: "Security posture", main: html`<p class="notice">No advisories: nothing in this deployment's settings weakens its security.</p>` };
    }
    return {
      kind: "html",
      title: "Security posture",
      main: html`<p>${advisories.length} ${advisories.length === 1 ? "advisory" : "advisories"}, most severe first.</p>
${advisories.map(
  (a) => html`<section class="advisory" aria-labelledby="adv-${a.name}">
<h2 id="adv-${a.name}"><span class="severity-${a.severity}">${a.severity === "critical" ? "Critical" : "Warning"}</span>: ${a.summary}</h2>
<p><strong>Why it matters:</strong> ${a.why}</p>
<p><strong>Clear it:</strong> ${a.remedy} (setting <code>${a.setting}</code>; advisory <code>${a.name}</code>).</p>
${a.nodes?.length ? html`<p>Nodes: ${a.nodes.map((n, i) => html`${i > 0 ? ", " : ""}<code>${n}</code>`)}</p>` : ""}
</section>`,
)}`,
    };
  },
};
