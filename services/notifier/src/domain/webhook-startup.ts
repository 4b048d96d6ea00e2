import type { Logger } from "pino";
import type { NotifierConfig } from "../config.js";
import { endpointLabel } from "./webhook-metrics.js";

type WebhookSettings = Pick<NotifierConfig, "enabled" | "endpoints" | "allowInternal" | "retries" | "retryBaseMs" | "timeoutMs" | "historyMs">;

/** What an operator should know of the webhook settings at start-up. */
export function logWebhookSettings(config: WebhookSettings, log: Pick<Logger, "info" | "warn">): void {
  if (config.enabled) {
    if (config.endpoints.length === 0) log.warn("svc.webhook is on but svc.webhook-endpoints lists no endpoint: nothing will be delivered");
    if (config.allowInternal) log.warn("svc.webhook-allow-internal is on: webhooks may go to plain http and to loopback, private and link-local addresses");
  } else {
    log.info("webhook delivery is off (svc.webhook=false): artifact events are read and acknowledged without deliveries");
  }
}

/** The fields of the ready line: never a secret, never a query string (a receiver's token may travel in one). */
export function webhookSummary(config: WebhookSettings): Record<string, unknown> {
  return {
    enabled: config.enabled,
    endpoints: config.endpoints.map((e) => ({ url: endpointLabel(e.url), events: e.allEvents ? "all" : e.kinds, signed: e.key !== undefined })),
    retries: config.retries,
    retryBaseMs: config.retryBaseMs,
    timeoutMs: config.timeoutMs,
    historyMs: config.historyMs,
  };
}
