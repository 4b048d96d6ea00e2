import type { ColumnType } from "kysely";

export const SCHEMA = "admin";

export interface RateLimitTable {
  tenant: string;
  requests_per_minute: number;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** A run-time setting's stored value, as text its catalog parser reads (kit RUNTIME_SETTINGS). */
export interface RuntimeSettingTable {
  name: string;
  value: string;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** One change of a run-time setting: who, when, the value before and after (null for a secret, never its text). */
export interface SettingChangeTable {
  id: ColumnType<string, never, never>;
  name: string;
  old_value: string | null;
  new_value: string | null;
  /** The tenant of a per-tenant override; null: the deployment's value. */
  tenant: ColumnType<string | null, string | null | undefined, never>;
  principal: string;
  changed_at: ColumnType<Date, Date | undefined, never>;
}

/** A per-tenant override of a run-time setting (kit TENANT_SETTINGS). */
export interface TenantSettingTable {
  tenant: string;
  name: string;
  value: string;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface AdminDatabase {
  rate_limits: RateLimitTable;
  runtime_settings: RuntimeSettingTable;
  setting_changes: SettingChangeTable;
  tenant_settings: TenantSettingTable;
}
