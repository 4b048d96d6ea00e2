import { loadSettings, readWebhookSettings, requireSettings, SettingsError, type Settings, type WebhookConfig } from "@svc/kit";

export interface NotifierConfig extends WebhookConfig {
  /** Everything the shared loader read (the node agent announces digests of them; the live settings follower lays the run-time values over them). */
  settings: Settings;
  tenant: string;
  databaseUrl: string;
  natsUrl: string;
  internalSecret: string;
  internalSecretPrevious: string;
  /** Where the run-time settings are read (svc.admin.url). */
  adminUrl: Settings["adminUrl"];
  host: string;
  port: number;
  /** svc.socket: a Unix socket listened on beside the port (blank: none). */
  socket: string;
  logLevel: string;
  shutdownGraceMs: number;
  databasePoolSize: number;
}

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them). */
export const REQUIRED_SETTINGS = ["databaseUrl", "internalSecret", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env): NotifierConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, REQUIRED_SETTINGS);
  // The webhook settings (s.webhook, s.webhookEndpoints, s.webhookSecrets, s.webhookAttempts,
  // s.webhookAllowInternal, s.webhookRetryBaseMs, s.webhookTimeoutMs, s.webhookHistoryMs) are
  // read together, here at start and again after each run-time change (main.ts).
  const web = readWebhookSettings(s);
  if (web.problems.length > 0) throw new SettingsError(web.problems);
  return {
    ...web.config,
    settings: s,
    tenant: s.tenant,
    databaseUrl: s.databaseUrl,
    natsUrl: s.natsUrl,
    internalSecret: s.internalSecret,
    internalSecretPrevious: s.internalSecretPrevious,
    adminUrl: s.adminUrl,
    host: s.host,
    port: s.port,
    socket: s.socket,
    logLevel: s.logLevel,
    shutdownGraceMs: s.shutdownGraceMs,
    databasePoolSize: s.databasePoolSize,
  };
}
