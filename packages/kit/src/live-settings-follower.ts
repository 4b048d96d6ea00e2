import type { Logger } from "pino";
import { ADMIN_INTERNAL, type StoredSettingsDoc } from "@svc/contracts";
import { internalClient } from "./internal-client.js";
import type { Bus } from "./messaging.js";
import { listenedControlSubjects } from "./node-agent.js";
import { RUNTIME_SETTINGS, SETTINGS, TENANT_SETTINGS, fixedAt, settingText, type RuntimeSetting, type SettingDef, type Settings } from "./settings.js";

/** A value sent in `PUT /api/settings/<name>` (or stored by one) read by the setting's own catalog parser. */
export function parseRuntimeValue(field: RuntimeSetting, value: unknown): { ok: true; value: unknown; text: string } | { ok: false; reason: string } {
  if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") return { ok: false, reason: "value must be a string, a number or true/false" };
  const d = SETTINGS[field] as SettingDef<unknown>;
  const r = d.parse(String(value));
  if (!r.ok) return { ok: false, reason: `${d.name} ${r.reason}` };
  // Stored as its value's text where that reads back as the same value; else as it was written:
  // a duration's value is milliseconds, and "30000" would read back as seconds.
  const text = settingText(r.value);
  const again = d.parse(text);
  return { ok: true, value: r.value, text: again.ok && JSON.stringify(again.value) === JSON.stringify(r.value) ? text : String(value).trim() };
}

/**
 * The settings in force with the stored run-time values laid over the ones read at start; a
 * setting the operator fixed at start keeps its value, as does one whose stored text no longer
 * parses (reported through `onBad`).
 */
export function overlayRuntime<S extends Pick<Settings, "sources">>(
  config: S,
  stored: ReadonlyMap<string, string>,
  onBad: (name: string, reason: string) => void = () => {},
  fields: readonly RuntimeSetting[] = RUNTIME_SETTINGS,
): S {
  const out: Record<string, unknown> = { ...config };
  for (const field of fields) {
    const text = stored.get(SETTINGS[field].name);
    // A service's settings hold the fields it reads (its config's Pick): the others are not its.
    if (text === undefined || !(field in config) || fixedAt(config, field) !== undefined) continue;
    const r = parseRuntimeValue(field, text);
    if (r.ok) out[field] = r.value;
    else onBad(SETTINGS[field].name, r.reason);
  }
  return out as S;
}

/** Per-tenant overrides as stored: tenant -> full setting name -> text. */
export type TenantOverrides = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** The settings in force for one tenant: its overrides (TENANT_SETTINGS only) laid over the deployment's `live` values; fixed ones are kept. */
export function overlayTenant<S extends Pick<Settings, "sources">>(live: S, overrides: TenantOverrides, tenant: string, onBad?: (name: string, reason: string) => void): S {
  const mine = overrides.get(tenant);
  return mine === undefined ? live : overlayRuntime(live, mine, onBad, TENANT_SETTINGS);
}

/** The per-tenant overrides of a StoredSettingsDoc as maps. */
export function tenantOverridesOf(doc: StoredSettingsDoc): Map<string, Map<string, string>> {
  return new Map(Object.entries(doc.tenants ?? {}).map(([t, byName]) => [t, new Map(Object.entries(byName))]));
}

/** What a follower needs of a service's settings: which were fixed at start, and how to reach the admin service. */
export type FollowedSettings = Pick<Settings, "sources" | "tenant" | "internalSecret" | "internalSecretPrevious">;

export interface LiveSettingsFollowerOptions<S extends FollowedSettings> {
  /** This node's settings as read at start (their `sources` say which the operator fixed). */
  config: S;
  /** Where the admin service answers `GET /internal/settings` (svc.admin.url). */
  adminUrl: string;
  /** This service's name, as the admin service's log names the caller. */
  caller: string;
  /** Announcements of a change (`settingsChanged` control subject); absent: the periodic read only. */
  bus?: Pick<Bus, "listen">;
  log: Logger;
  /** How often the stored values are read in case an announcement was lost; 30 s. */
  refreshMs?: number;
}

/**
 * A service's live view of the run-time settings (`PUT /api/settings/<name>`, kept by the admin
 * service): its own settings with the stored values laid over them, read at start, again within
 * moments of each change the admin service announces over NATS, and every `refreshMs` in case an
 * announcement was lost (NATS away). With the admin service away the last values read stay in
 * force; until the first read, the values read at start.
 */
export function liveSettingsFollower<S extends FollowedSettings>(o: LiveSettingsFollowerOptions<S>) {
  const admin = internalClient({
    baseUrl: o.adminUrl,
    service: "admin service",
    internalSecret: o.config.internalSecret,
    tenant: o.config.tenant,
    caller: o.caller,
    connections: 1,
    timeoutMs: 3000,
  });
  let current = o.config;
  let stored = new Map<string, string>();
  let tenants: TenantOverrides = new Map();
  let tenantsText = "{}";
  let warned = false;
  const listeners = new Set<(now: S, before: S) => void>();
  const runtimeText = (v: S, f: RuntimeSetting) => settingText((v as Partial<Record<RuntimeSetting, unknown>>)[f]);
  const reported = new Set<string>();

  const reportBad = (name: string, reason: string) => {
    if (reported.has(name)) return;
    reported.add(name);
    o.log.warn({ setting: name, reason }, "stored run-time setting does not parse; using the value read at start");
  };

  const refresh = async (): Promise<S> => {
    let body: StoredSettingsDoc;
    try {
      ({ body } = await admin.get<StoredSettingsDoc>(ADMIN_INTERNAL.settings, { expect: [200] }));
      stored = new Map(Object.entries(body.stored ?? {}));
      tenants = tenantOverridesOf(body);
      warned = false;
    } catch (err) {
      if (!warned) o.log.warn({ err: { message: (err as Error).message } }, "could not read the run-time settings from the admin service; using the last ones read");
      warned = true;
      return current;
    }
    const before = current;
    current = overlayRuntime(o.config, stored, reportBad);
    const tenantsBefore = tenantsText;
    tenantsText = JSON.stringify(body.tenants ?? {});
    if (tenantsText !== tenantsBefore || RUNTIME_SETTINGS.some((f) => runtimeText(before, f) !== runtimeText(current, f))) {
      for (const l of listeners) l(current, before);
    }
    return current;
  };

  for (const listened of o.bus ? listenedControlSubjects(o.config) : []) o.bus!.listen(listened.settingsChanged, () => void refresh());
  const timer = setInterval(() => void refresh(), o.refreshMs ?? 30_000);
  timer.unref();

  return {
    /** The settings in force now (the deployment's values). */
    current: (): S => current,
    /**
     * The settings in force now for one tenant: its per-tenant overrides of the gate settings
     * (TENANT_SETTINGS: `PUT /api/settings/<name>?tenant=<t>`) laid over `current()`.
     */
    forTenant: (tenant: string): S => overlayTenant(current, tenants, tenant, reportBad),
    /** Reads the stored values now (at start; tests). */
    refresh,
    /** Called after a read that changed a run-time value or a tenant's override, with the (deployment's) values before. */
    onChange(listener: (now: S, before: S) => void): void {
      listeners.add(listener);
    },
    close: async (): Promise<void> => {
      clearInterval(timer);
      await admin.close();
    },
  };
}
export type LiveSettingsFollower<S extends FollowedSettings = Settings> = ReturnType<typeof liveSettingsFollower<S>>;
