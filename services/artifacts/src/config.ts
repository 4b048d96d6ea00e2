import { loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";

export type ArtifactsConfig = Pick<
  Settings,
  "tenant" | "repository" | "readOnly" | "filesystemRoot" | "internalSecret" | "databaseUrl" | "natsUrl" | "host" | "port" | "logLevel" | "shutdownGraceMs" | "databasePoolSize"
> &
  NodeAgentSettings;

export function loadConfig(argv = process.argv.slice(2), env = process.env): ArtifactsConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, ["databaseUrl", "internalSecret", "filesystemRoot", "natsUrl"]);
  return s;
}
