import { loadSettings, requireSettings, SettingsError, type Settings } from "@svc/kit";
import { parseWebhookSettings, type Endpoint } from "./domain/endpoint-settings.js";

export interface NotifierConfig {
  /** Everything the shared loader read (the node agent announces digests of them). */
  settings: Settings;
  tenant: string;
  databaseUrl: string;
  natsUrl: string;
  internalSecret: string;
  internalSecretPrevious: string;
  host: string;
  port: number;
  logLevel: string;
  shutdownGraceMs: number;
  databasePoolSize: number;
  /** svc.webhook: deliver at all. */
  enabled: boolean;
  endpoints: Endpoint[];
  /** svc.webhook-attempts: retries after the first try, before a delivery is set aside. */
  retries: number;
  allowInternal: boolean;
  /** svc.webhook-retry-base: the pause before the first retry (each next one doubles). */
  retryBaseMs: number;
  /** svc.webhook-timeout: the longest one delivery attempt may take, connection included. */
  timeoutMs: number;
  /** svc.webhook-history: how long finished deliveries (and their events) are kept; 0 = for ever. */
  historyMs: number;
}

const LIMITS = {
  retryBase: { name: "svc.webhook-retry-base", min: 10, max: 3_600_000 },
  timeout: { name: "svc.webhook-timeout", min: 100, max: 300_000 },
} as const;

function within(value: number, d: (typeof LIMITS)[keyof typeof LIMITS], source: string, problems: string[]): number {
  if (value < d.min || value > d.max) problems.push(`${d.name} (from ${source}) must be a duration from ${d.min} ms to ${d.max / 1000} s, such as 30s, PT1M or 500ms`);
  return value;
}

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them). */
export const REQUIRED_SETTINGS = ["databaseUrl", "internalSecret", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env): NotifierConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, REQUIRED_SETTINGS);
  const problems: string[] = [];
  const retryBaseMs = within(s.webhookRetryBaseMs, LIMITS.retryBase, s.sources["svc.webhook-retry-base"] ?? "default", problems);
  const timeoutMs = within(s.webhookTimeoutMs, LIMITS.timeout, s.sources["svc.webhook-timeout"] ?? "default", problems);
  const web = parseWebhookSettings({
    endpoints: s.webhookEndpoints,
    secrets: s.webhookSecrets,
    allowInternal: s.webhookAllowInternal,
    sourceOf: (name) => s.sources[name] ?? "default",
  });
  problems.push(...web.problems);
  if (problems.length > 0) throw new SettingsError(problems);
  return {
    settings: s,
    tenant: s.tenant,
    databaseUrl: s.databaseUrl,
    natsUrl: s.natsUrl,
    internalSecret: s.internalSecret,
    internalSecretPrevious: s.internalSecretPrevious,
    host: s.host,
    port: s.port,
    logLevel: s.logLevel,
    shutdownGraceMs: s.shutdownGraceMs,
    historyMs: s.webhookHistoryMs,
    databasePoolSize: s.databasePoolSize,
    enabled: s.webhook,
    endpoints: web.endpoints,
    retries: s.webhookAttempts,
    allowInternal: s.webhookAllowInternal,
    retryBaseMs,
    timeoutMs,
  };
}
