import { loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";

export type ArtifactsConfig = Pick<
  Settings,
  "tenant" | "repository" | "repositoryFormat" | "readOnly" | "filesystemRoot" | "internalSecret" | "internalSecretPrevious" | "databaseUrl" | "natsUrl" | "host" | "port" | "logLevel" | "shutdownGraceMs" | "databasePoolSize" | "uploadIdleTimeoutMs" | "uiPublicUrl" | "indexCacheTtlMs"
> &
  NodeAgentSettings;

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them). */
export const REQUIRED_SETTINGS = ["databaseUrl", "internalSecret", "filesystemRoot", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env): ArtifactsConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, REQUIRED_SETTINGS);
  return s;
}
