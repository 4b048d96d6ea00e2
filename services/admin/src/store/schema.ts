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

/**
 * One sampling of the deployment's meters (domain/meter-sampling.ts), taken once per interval
 * across every admin node: `slot` (the instant rounded down to the interval) is the key, so a
 * second node's insert of the same slot does nothing.
 */
export interface MeterSampleTable {
  slot: Date;
  taken_at: ColumnType<Date, Date, never>;
  /** The admin node that took it. */
  taken_by: ColumnType<string, string, never>;
  /** node -> its cumulative counters (SampleReading), as JSON. */
  nodes: ColumnType<unknown, string, never>;
  /** The bytes every repository's index holds (sum of svc_repository_used_bytes); null: no artifacts node answered. */
  storage_bytes: ColumnType<string | null, number | null, never>;
}

/** A publish the admin service heard of (artifact.published), for the console's home page; kept for svc.metrics.history. */
export interface RecentPublishTable {
  id: string;
  published_at: Date;
  repository: string;
  path: string;
  size: ColumnType<string, number, never>;
  actor: string;
}

export interface AdminDatabase {
  meter_samples: MeterSampleTable;
  recent_publishes: RecentPublishTable;
  rate_limits: RateLimitTable;
  runtime_settings: RuntimeSettingTable;
  setting_changes: SettingChangeTable;
  tenant_settings: TenantSettingTable;
}
