import type { DeliveryView as Delivery, EndpointView as Endpoint } from "@svc/contracts";
import { html } from "./html.js";
import type { ConsolePage } from "./page-contract.js";
import { PAGE_SIZE, actionForm, afterChange, listPage, pager, when } from "./page-widgets.js";


const BASE = "/ui/webhooks";
const STATES = ["set-aside", "pending", "delivered"] as const;
const STATE_NAMES: Record<string, string> = { "": "All", "set-aside": "Set aside", pending: "Pending", delivered: "Delivered" };

/** Webhook deliveries (set-aside ones with their last error) and "Send again"; the endpoints in force. */
export const webhooksPage: ConsolePage = {
  slug: "webhooks",
  nav: "Webhooks",
  needs: "manage:read on * (manage:write to send a delivery again)",

  async get(ctx) {
    const state = (STATES as readonly string[]).includes(ctx.query.state ?? "") ? ctx.query.state! : "";
    const [deliveries, endpoints] = await Promise.all([
      listPage<Delivery>(ctx, "/api/webhooks/deliveries", { limit: String(PAGE_SIZE), after: ctx.query.after, state: state || undefined }),
      listPage<Endpoint>(ctx, "/api/webhooks/endpoints", { limit: String(PAGE_SIZE) }),
    ]);
    const here = state ? `${BASE}?state=${state}` : BASE;
    const main = html`
      <section aria-labelledby="deliveries-heading">
        <h2 id="deliveries-heading">Deliveries</h2>
        <p>${["", ...STATES].map(
          (s, i) => html`${i ? " · " : ""}<a href="${s ? `${BASE}?state=${s}` : BASE}"${s === state ? html` aria-current="page"` : ""}>${STATE_NAMES[s]}</a>`,
        )}</p>
        <p>A failing delivery is retried with a growing pause, then set aside; "Send again" queues it once more.</p>
        <table class="list" id="deliveries">
          <thead><tr><th scope="col">Id</th><th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Last error</th><th scope="col">Updated</th><th scope="col">Send again</th></tr></thead>
          <tbody>${
            deliveries.items.length
              ? deliveries.items.map(
                  (d) => html`<tr>
                    <td>${d.id}</td><td>${d.type}</td><td><code>${d.endpoint}</code></td>
                    <td>${d.state === "set-aside" ? html`<strong class="badge warning">set aside</strong>` : d.state}${d.state === "pending" && d.nextAttempt ? html`<br><small>next try ${when(d.nextAttempt)}</small>` : ""}</td>
                    <td>${d.attempts}</td><td>${d.lastStatus ?? ""}</td><td>${d.lastError ?? ""}</td><td>${when(d.updated)}</td>
                    <td>${d.state === "set-aside" ? actionForm(ctx, { to: here, action: "redeliver", button: "Send again", fields: { id: d.id } }) : ""}</td>
                  </tr>`,
                )
              : html`<tr><td colspan="9">No deliveries${state ? ` ${STATE_NAMES[state]!.toLowerCase()}` : ""}.</td></tr>`
          }</tbody>
        </table>
        ${pager({ base: BASE, param: "after", current: ctx.query.after, next: deliveries.next, keep: { state }, label: "deliveries" })}
      </section>
      <section aria-labelledby="endpoints-heading">
        <h2 id="endpoints-heading">Endpoints</h2>
        <p>Configured by the <code>svc.webhook-endpoints</code> and <code>svc.webhook-secrets</code> settings.</p>
        <table class="list" id="endpoints">
          <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Signed</th></tr></thead>
          <tbody>${
            endpoints.items.length
              ? endpoints.items.map((e) => html`<tr><td><code>${e.url}</code></td><td>${e.allEvents ? "all" : e.events.join(", ")}</td><td>${e.signed ? "yes" : "no"}</td></tr>`)
              : html`<tr><td colspan="3">No endpoints configured.</td></tr>`
          }</tbody>
        </table>
      </section>`;
    return { kind: "html", title: "Webhooks", main };
  },

  actions: {
    async redeliver(ctx) {
      const id = ctx.form.id ?? "";
      const back = ctx.query.state ? `${BASE}?state=${encodeURIComponent(ctx.query.state)}` : BASE;
      if (!/^[0-9]{1,18}$/.test(id)) return { kind: "redirect", location: back, notice: "Not done: no such delivery" };
      return afterChange(await ctx.api("POST", `/api/webhooks/deliveries/${id}/redeliver`, {}), back, `Delivery ${id} queued to be sent again`);
    },
  },
};
