import { loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";

export type WalkerConfig = Pick<
  Settings,
  "tenant" | "readOnly" | "filesystemRoot" | "artifactsUrl" | "internalSecret" | "databaseUrl" | "natsUrl" | "host" | "port" | "logLevel" | "shutdownGraceMs" | "databasePoolSize"
> &
  NodeAgentSettings;

export function loadConfig(argv = process.argv.slice(2), env = process.env): WalkerConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, ["databaseUrl", "internalSecret", "filesystemRoot", "natsUrl"]);
  return s;
}
