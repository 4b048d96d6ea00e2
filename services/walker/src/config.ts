import { loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";

export type WalkerConfig = Pick<
  Settings,
  "tenant" | "readOnly" | "filesystemRoot" | "storage" | "s3Bucket" | "s3Endpoint" | "s3Region" | "s3PathStyle" | "s3Prefix" | "s3AccessKey" | "s3SecretKey" | "s3EqualParts" | "s3IdleTimeoutMs" | "storageReclaimGraceMs" | "artifactsUrl" | "internalSecret" | "internalSecretPrevious" | "databaseUrl" | "natsUrl" | "host" | "port" | "socket" | "logLevel" | "shutdownGraceMs" | "databasePoolSize"
> &
  NodeAgentSettings;

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them); and the store's own: svc.filesystem-root, or svc.storage.s3.bucket with svc.storage=s3. */
export const REQUIRED_SETTINGS = ["databaseUrl", "internalSecret", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env): WalkerConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, [...REQUIRED_SETTINGS, s.storage === "s3" ? "s3Bucket" : "filesystemRoot"]);
  return s;
}
