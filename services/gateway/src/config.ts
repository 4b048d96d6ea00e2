import { loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";

export type GatewayConfig = Pick<
  Settings,
  | "tenant"
  | "auth"
  | "anonymousRights"
  | "repositoryScopeFromPath"
  | "readOnly"
  | "cacheTtlMs"
  | "trackKeyUsage"
  | "trustedProxies"
  | "internalSecret"
  | "internalSecretPrevious"
  | "natsUrl"
  | "host"
  | "port"
  | "authUrl"
  | "artifactsUrl"
  | "adminUrl"
  | "walkerUrl"
  | "notifierUrl"
  | "consoleUrl"
  | "uiDeploy"
  | "redisUrl"
  | "rateLimit"
  | "logLevel"
  | "shutdownGraceMs"
  | "uploadIdleTimeoutMs"
  | "uploadConcurrency"
  | "artifactsSeparateOrigin"
  | "sources"
> &
  NodeAgentSettings;

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them). */
export const REQUIRED_SETTINGS = ["internalSecret", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env): GatewayConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, REQUIRED_SETTINGS);
  return s;
}
