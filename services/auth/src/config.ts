import { loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";

export type AuthConfig = Pick<
  Settings,
  | "tenant"
  | "bootstrapKey"
  | "credentialDefaultLifetime"
  | "credentialMaxLifetime"
  | "trackKeyUsage"
  | "uiAdmins"
  | "profile"
  | "internalSecret"
  | "artifactsUrl"
  | "internalSecretPrevious"
  | "databaseUrl"
  | "natsUrl"
  | "host"
  | "port"
  | "socket"
  | "logLevel"
  | "shutdownGraceMs"
  | "databasePoolSize"
> &
  NodeAgentSettings;

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them). */
export const REQUIRED_SETTINGS = ["databaseUrl", "internalSecret", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env): AuthConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, REQUIRED_SETTINGS);
  return s;
}
