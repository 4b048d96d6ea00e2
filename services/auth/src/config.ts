import { loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";

export type AuthConfig = Pick<
  Settings,
  | "tenant"
  | "bootstrapKey"
  | "credentialDefaultLifetime"
  | "credentialMaxLifetime"
  | "trackKeyUsage"
  | "uiAdmins"
  | "internalSecret"
  | "databaseUrl"
  | "natsUrl"
  | "host"
  | "port"
  | "logLevel"
  | "shutdownGraceMs"
  | "databasePoolSize"
> &
  NodeAgentSettings;

export function loadConfig(argv = process.argv.slice(2), env = process.env): AuthConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, ["databaseUrl", "internalSecret", "natsUrl"]);
  return s;
}
