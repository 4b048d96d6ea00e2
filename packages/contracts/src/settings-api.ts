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
  nodes: SettingNodeValue[];
}

export interface SettingsTable {
  nodes: { node: string; service: string }[];
  settings: SettingRow[];
}
