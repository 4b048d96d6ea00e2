import type { Logger } from "pino";
import { RUNTIME_SETTINGS, SETTINGS, fixedAt, settingText, type RuntimeSetting, type SettingDef, type Settings } from "@svc/kit";
import type { RuntimeSettingStore } from "../store/runtime-setting-store.js";

/** A value sent in `PUT /api/settings/<name>` read by the setting's own catalog parser. */
export function parseRuntimeValue(field: RuntimeSetting, value: unknown): { ok: true; value: unknown; text: string } | { ok: false; reason: string } {
  if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") return { ok: false, reason: "value must be a string, a number or true/false" };
  const d = SETTINGS[field] as SettingDef<unknown>;
  const r = d.parse(String(value));
  return r.ok ? { ok: true, value: r.value, text: settingText(r.value) } : { ok: false, reason: `${d.name} ${r.reason}` };
}

/**
 * The settings in force with the stored run-time values laid over the ones read at start; a
 * setting the operator fixed at start keeps its value, as does one whose stored text no longer
 * parses (logged once per load).
 */
export function overlayRuntime(config: Settings, stored: ReadonlyMap<string, string>, onBad: (name: string, reason: string) => void = () => {}): Settings {
  const out: Record<string, unknown> = { ...config };
  for (const field of RUNTIME_SETTINGS) {
    const text = stored.get(SETTINGS[field].name);
    if (text === undefined || fixedAt(config, field) !== undefined) continue;
    const r = parseRuntimeValue(field, text);
    if (r.ok) out[field] = r.value;
    else onBad(SETTINGS[field].name, r.reason);
  }
  return out as Settings;
}

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
