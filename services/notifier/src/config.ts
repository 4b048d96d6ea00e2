import { loadSettings, parseSettingDuration, requireSettings, SettingsError, type Settings } from "@svc/kit";
import { DEFAULT_RETRY_BASE_MS } from "./domain/backoff.js";
import { parseWebhookSettings, type Endpoint } from "./domain/endpoint-settings.js";

export interface NotifierConfig {
  /** Everything the shared loader read (the node agent announces digests of them). */
  settings: Settings;
  tenant: string;
  databaseUrl: string;
  natsUrl: string;
  internalSecret: string;
  host: string;
  port: number;
  logLevel: string;
  /** svc.webhook: deliver at all. */
  enabled: boolean;
  endpoints: Endpoint[];
  /** svc.webhook-attempts: retries after the first try, before a delivery is set aside. */
  retries: number;
  allowInternal: boolean;
  /** SVC_WEBHOOK_RETRY_BASE: the pause before the first retry (each next one doubles). */
  retryBaseMs: number;
  /** SVC_WEBHOOK_TIMEOUT: the longest one delivery attempt may take, connection included. */
  timeoutMs: number;
}

/**
 * Two knobs of this service only, read from the environment here (the shared loader refuses
 * `-D`/properties-file names it does not know): `SVC_WEBHOOK_RETRY_BASE` (default 30 s) and
 * `SVC_WEBHOOK_TIMEOUT` (default 10 s), both durations like every other setting.
 */
const LOCAL = {
  retryBase: { env: "SVC_WEBHOOK_RETRY_BASE", default: DEFAULT_RETRY_BASE_MS, min: 10, max: 3_600_000 },
  timeout: { env: "SVC_WEBHOOK_TIMEOUT", default: 10_000, min: 100, max: 300_000 },
} as const;

function localDuration(env: NodeJS.ProcessEnv, d: (typeof LOCAL)[keyof typeof LOCAL], problems: string[]): number {
  const raw = env[d.env];
  if (raw === undefined || raw.trim() === "") return d.default;
  const ms = parseSettingDuration(raw);
  if (ms === undefined || ms < d.min || ms > d.max) {
    problems.push(`${d.env} (from environment ${d.env}) must be a duration from ${d.min} ms to ${d.max / 1000} s, such as 30s, PT1M or 500ms`);
    return d.default;
  }
  return ms;
}

export function loadConfig(argv = process.argv.slice(2), env = process.env): NotifierConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, ["databaseUrl", "internalSecret", "natsUrl"]);
  const problems: string[] = [];
  const retryBaseMs = localDuration(env, LOCAL.retryBase, problems);
  const timeoutMs = localDuration(env, LOCAL.timeout, problems);
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
    host: s.host,
    port: s.port,
    logLevel: s.logLevel,
    enabled: s.webhook,
    endpoints: web.endpoints,
    retries: s.webhookAttempts,
    allowInternal: s.webhookAllowInternal,
    retryBaseMs,
    timeoutMs,
  };
}
