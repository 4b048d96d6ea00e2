import { loadSettings, requireSettings, type Settings } from "@svc/kit";

/** The admin service reads every setting: the posture is about all of them. */
export type AdminConfig = Settings;

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them). */
export const REQUIRED_SETTINGS = ["internalSecret", "databaseUrl", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

export function loadConfig(argv = process.argv.slice(2), env = process.env): AdminConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, REQUIRED_SETTINGS);
  return s;
}
