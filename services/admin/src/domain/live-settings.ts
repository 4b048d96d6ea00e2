import type { Logger } from "pino";
import { SETTINGS, overlayRuntime, overlayTenant, settingText, shownSettingText, type RuntimeSetting, type Settings, type TenantOverrides, type TenantSetting } from "@svc/kit";
import type { RuntimeSettingStore } from "../store/runtime-setting-store.js";

/**
 * This admin node's live view of the run-time settings: read from Postgres at start, after each
 * change made here, and when another node announces one. Per-tenant overrides are read with them.
 */
export function liveSettingsFactory(deps: { config: Settings; store: Pick<RuntimeSettingStore, "load" | "set"> & Partial<Pick<RuntimeSettingStore, "loadTenants" | "setForTenant">>; log: Logger }) {
  let current = deps.config;
  let tenants: TenantOverrides = new Map();
  const bad = (name: string, reason: string) => deps.log.warn({ setting: name, reason }, "stored run-time setting does not parse; using the value read at start");
  const refresh = async (): Promise<Settings> => {
    const [stored, overrides] = await Promise.all([deps.store.load(), deps.store.loadTenants?.() ?? new Map()]);
    current = overlayRuntime(deps.config, stored, bad);
    tenants = overrides;
    return current;
  };
  const store = () => {
    if (!deps.store.setForTenant) throw new Error("per-tenant overrides need the store's setForTenant");
    return deps.store.setForTenant;
  };
  return {
    current: (): Settings => current,
    /** The settings in force for one tenant: its overrides over the deployment's values. */
    forTenant: (tenant: string): Settings => overlayTenant(current, tenants, tenant, bad),
    /** Every tenant's overrides as stored (tenant -> setting name -> text). */
    overrides: (): TenantOverrides => tenants,
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
    /**
     * Sets (text) or removes (null) a tenant's override, recording it; answers the tenant's value
     * before and after, or undefined when there was no override to remove.
     */
    async changeForTenant(field: TenantSetting, tenant: string, text: string | null, principal: string): Promise<{ oldValue: string; newValue: string } | undefined> {
      await refresh();
      const name = SETTINGS[field].name;
      const oldValue = settingText(overlayTenant(current, tenants, tenant)[field]);
      const newValue = text ?? settingText(current[field]);
      if (!(await store()(tenant, name, text, { oldValue, newValue: text }, principal))) return undefined;
      await refresh();
      return { oldValue, newValue };
    },
  };
}
export type LiveSettings = ReturnType<typeof liveSettingsFactory>;
