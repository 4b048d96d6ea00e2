import { SettingsError, loadSettings, requireSettings, type Settings, type NodeAgentSettings } from "@svc/kit";
import type { FormatModule } from "./formats/format.js";
import { FORMATS } from "./formats/index.js";

export type ArtifactsConfig = Pick<
  Settings,
  "tenant" | "repository" | "repositoryFormat" | "readOnly" | "auth" | "anonymousRights" | "repositoryScopeFromPath" | "filesystemRoot" | "storage" | "s3Bucket" | "s3Endpoint" | "s3Region" | "s3PathStyle" | "s3Prefix" | "s3AccessKey" | "s3SecretKey" | "s3EqualParts" | "s3IdleTimeoutMs" | "s3Redirect" | "s3RedirectTtlMs" | "internalSecret" | "internalSecretPrevious" | "databaseUrl" | "natsUrl" | "host" | "port" | "socket" | "artifactsNodeUrl" | "logLevel" | "shutdownGraceMs" | "databasePoolSize" | "uploadIdleTimeoutMs" | "uiPublicUrl" | "indexCacheTtlMs" | "adminUrl" | "sources" | "malwareAction" | "vulnerabilityAction" | "vulnerabilityThreshold" | "denyListAction" | "gateMinAge" | "advisoriesSources" | "advisoriesRefreshMs" | "blockPrivateImportHosts" | "proxyMetadataTtlMs" | "proxyMetadataStaleMs" | "buildCacheMaxBytes" | "buildCacheMaxEntryBytes"
> &
  NodeAgentSettings;

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them); and the store's own: svc.filesystem-root, or svc.storage.s3.bucket with svc.storage=s3. */
export const REQUIRED_SETTINGS = ["databaseUrl", "internalSecret", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env, formats: readonly FormatModule[] = FORMATS): ArtifactsConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, [...REQUIRED_SETTINGS, s.storage === "s3" ? "s3Bucket" : "filesystemRoot"]);
  // The format table is the one list of formats: a name it lacks refuses the start, before anything is written.
  if (!formats.some((f) => f.name === s.repositoryFormat)) {
    throw new SettingsError([`svc.repository-format is "${s.repositoryFormat}", a format this artifacts service does not serve (it serves ${formats.map((f) => f.name).join(", ")})`]);
  }
  // A redirect sends clients to the bucket: a node on a folder has none, and would silently serve
  // the bytes itself while the operator counts on the object store doing it.
  if (s.s3Redirect && s.storage !== "s3") {
    throw new SettingsError([`svc.storage.s3.redirect=true needs svc.storage=s3 (this node stores on the filesystem, svc.storage=${s.storage}): unset svc.storage.s3.redirect, or move the node to the S3 blob store`]);
  }
  return s;
}
