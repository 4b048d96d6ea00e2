/**
 * The settings API's answer (`GET /api/settings`): every setting in force on each node, lined
 * up by the admin service; the console reads it. A secret is only ever "set" or "not set".
 */

/** Where a node's value of a setting came from. */
export type SettingOrigin = "default" | "environment" | "-D" | "file";

/** One node's value of a setting. */
export interface SettingNodeValue {
  node: string;
  service: string;
  from: SettingOrigin;
  set: boolean;
  /** Absent for a secret. */
  value?: string;
}

export interface SettingRow {
  name: string;
  environment: string;
  description: string;
  secret: boolean;
  /** The services that act on it (the catalog's `readBy`). */
  readBy: string[];
  /** Whether every node reporting it runs with the same value (for a secret: compared by keyed digest, never by value). */
  agree: boolean;
  /** Differs between nodes by nature (a process's own host and port, its log level, ...): `agree` is true whatever the values. */
  perProcess?: boolean;
  nodes: SettingNodeValue[];
  /** Present on a setting that changes at run time (`PUT /api/settings/<name>`): true. */
  runtime?: boolean;
  /** A run-time setting's live value, as text its parser reads. */
  value?: string;
  /** A run-time setting fixed by the operator at start: a PUT is refused (409). */
  fixed?: boolean;
  /** Where it is fixed (`environment SVC_RATE_LIMIT`, `-Dsvc.rate-limit`, `properties file …`). */
  fixedAt?: string;
  /** A run-time secret: whether its live value is set (the value itself is never shown). */
  set?: boolean;
  /** A setting that can be overridden for a tenant (`PUT /api/settings/<name>?tenant=<t>`): the overrides. */
  tenants?: { tenant: string; value: string }[];
}

export interface SettingsTable {
  nodes: { node: string; service: string }[];
  settings: SettingRow[];
}

/** One change of a run-time setting (`GET /api/settings/changes`): a secret's values are null, never shown. */
export interface SettingChangeRow {
  id: string;
  name: string;
  oldValue: string | null;
  newValue: string | null;
  /** The tenant a per-tenant override was set for or removed from (its new value then null); absent: the deployment's value. */
  tenant?: string;
  principal: string;
  at: string;
}
