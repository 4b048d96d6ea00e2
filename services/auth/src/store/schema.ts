import type { ColumnType, Generated } from "kysely";

export const SCHEMA = "auth";

export interface CredentialTable {
  id: string;
  tenant: string;
  label: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  expires_at: Date | null;
  revoked_at: Date | null;
  allowed_ips: ColumnType<string[], string[] | undefined, string[]>;
  bootstrap: ColumnType<boolean, boolean | undefined, boolean>;
  seq: Generated<number>;
}

export interface GrantTable {
  subject_kind: "key" | "person" | "group";
  subject_id: string;
  scope: string;
  tokens: string[];
  expires_at: Date | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface AuthDatabase {
  credentials: CredentialTable;
  grants: GrantTable;
}
