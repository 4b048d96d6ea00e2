import type { Logger } from "pino";
import { SETTINGS, overlayRuntime, settingText, shownSettingText, type RuntimeSetting, type Settings } from "@svc/kit";
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
    /**
     * Stores a parsed value and records who changed it; answers the old and new text as they may
     * be shown (undefined for a secret, masked where part of the value is one), which is also
     * what the record keeps.
     */
    async change(field: RuntimeSetting, text: string, principal: string): Promise<{ oldValue?: string; newValue?: string }> {
      await refresh();
      const oldValue = shownSettingText(field, settingText(current[field]));
      const newValue = shownSettingText(field, text);
      await deps.store.set(SETTINGS[field].name, text, { oldValue: oldValue ?? null, newValue: newValue ?? null }, principal);
      await refresh();
      return { oldValue, newValue };
    },
  };
}
export type LiveSettings = ReturnType<typeof liveSettingsFactory>;
