import type { Logger } from "pino";
import { SETTINGS, overlayRuntime, settingText, type RuntimeSetting, type SettingDef, type Settings } from "@svc/kit";
import type { RuntimeSettingStore } from "../store/runtime-setting-store.js";

/**
 * This admin node's live view of the run-time settings: read from Postgres at start, after each
 * change made here, and when another node announces one.
 */
export function liveSettingsFactory(deps: { config: Settings; store: Pick<RuntimeSettingStore, "load" | "set">; log: Logger }) {
  let current = deps.config;
  const refresh = async (): Promise<Settings> => {
    current = overlayRuntime(deps.config, await deps.store.load(), (name, reason) => deps.log.warn({ setting: name, reason }, "stored run-time setting does not parse; using the value read at start"));
    return current;
  };
  return {
    current: (): Settings => current,
    refresh,
    /** The stored values read again; with Postgres away, the last ones read (the posture and the rate ceiling still answer). */
    async fresh(): Promise<Settings> {
      try {
        return await refresh();
      } catch (err) {
        deps.log.warn({ err: { message: (err as Error).message } }, "could not read the run-time settings; using the last ones read");
        return current;
      }
    },
    /** Stores a parsed value and records who changed it; answers the old and new text. */
    async change(field: RuntimeSetting, text: string, principal: string): Promise<{ oldValue: string; newValue: string }> {
      const d = SETTINGS[field] as SettingDef<unknown>;
      await refresh();
      const oldValue = settingText(current[field]);
      await deps.store.set(d.name, text, d.secret ? { oldValue: null, newValue: null } : { oldValue, newValue: text }, principal);
      await refresh();
      return { oldValue, newValue: text };
    },
  };
}
export type LiveSettings = ReturnType<typeof liveSettingsFactory>;
