import { loadSettings, requireSettings, type Settings } from "@svc/kit";

export type AdminConfig = Pick<Settings, "tenant" | "auth" | "readOnly" | "anonymousRights" | "internalSecret" | "host" | "port" | "logLevel">;

export function loadConfig(argv = process.argv.slice(2), env = process.env): AdminConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, ["internalSecret"]);
  return s;
}
