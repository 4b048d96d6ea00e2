import { loadSettings, requireSettings, type Settings } from "@svc/kit";

/** The admin service reads every setting: the posture is about all of them. */
export type AdminConfig = Settings;

export function loadConfig(argv = process.argv.slice(2), env = process.env): AdminConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, ["internalSecret", "databaseUrl", "natsUrl"]);
  return s;
}
