import type { CacheStats, CachesView } from "@svc/contracts";
import { html } from "./html.js";
import { expectOk, type ConsolePage } from "./page-contract.js";
import { csrfInput } from "./page-widgets.js";

/** The hit ratio as a person reads it; blank before the first lookup. */
const ratio = (c: CacheStats) => (c.hits + c.misses === 0 ? "" : `${Math.round((100 * c.hits) / (c.hits + c.misses))} %`);
const ttl = (s: number) => (s === 0 ? "off" : s % 60 === 0 ? `${s / 60} min` : `${s} s`);

/**
 * The read caches of the gateway node that answers (GET /api/caches is node-local, like "this
 * node"), and "Clear caches on this node", which also tells every other gateway to re-read
 * credentials, people and sessions.
 */
export const cachesPage: ConsolePage = {
  slug: "caches",
  nav: "Caches",
  needs: "manage:read on * (clearing: manage:write on *)",
  async get(ctx) {
    const body = expectOk(await ctx.api<CachesView>("GET", "/api/caches"));
    const caches = body.caches ?? [];
    return {
      kind: "html",
      title: "Caches",
      main: html`<p>Read caches of the gateway node <code>${body.node}</code> that answered this page.</p>
<table class="data" id="caches">
<caption>Read caches</caption>
<thead><tr><th scope="col">Cache</th><th scope="col">What it holds</th><th scope="col">Time to live</th><th scope="col">Hits</th><th scope="col">Misses</th><th scope="col">Hit ratio</th><th scope="col">Entries</th></tr></thead>
<tbody>
${caches.map((c) => html`<tr><th scope="row"><code>${c.name}</code></th><td>${c.description}</td><td>${ttl(c.ttlSeconds)}</td><td>${c.hits}</td><td>${c.misses}</td><td>${ratio(c)}</td><td>${c.size}</td></tr>`)}
</tbody>
</table>
${caches.length === 0 ? html`<p>This node reports no read cache.</p>` : ""}
${ctx.may("manage:write") ? html`<form method="post" action="/ui/caches" class="actions">
${csrfInput(ctx)}
<input type="hidden" name="_action" value="clear">
<button type="submit" id="clear-caches">Clear caches on this node</button>
<p class="hint">Empties every cache above and tells every other gateway to re-read credentials, people and sessions; their other caches expire on their own time to live.</p>
</form>` : ""}`,
    };
  },
  actions: {
    async clear(ctx) {
      const r = expectOk(await ctx.api<{ node: string; cleared: string[]; announced: boolean }>("POST", "/api/caches/clear", {}));
      const told = r.announced ? "every other gateway was told to re-read credentials" : "the other gateways could not be told (NATS is not connected): their entries expire on their own time to live";
      return { kind: "redirect", location: "/ui/caches", notice: `Caches cleared on node ${r.node ?? "this node"}${r.cleared?.length ? ` (${r.cleared.join(", ")})` : ""}; ${told}.` };
    },
  },
};
