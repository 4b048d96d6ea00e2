import type { CredentialChanged } from "@svc/contracts";
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
  last_used_at: Date | null;
  last_used_from: string | null;
  use_count: ColumnType<string, number | undefined, number>;
  /** The successor a rotation retired this key in favour of: its expiry may then only come sooner. */
  rotated_to: ColumnType<string | null, string | null | undefined, string | null>;
  /** A personal key's person: it holds at most what they hold, and ends with them. Null: an administrator's key. */
  owner: ColumnType<string | null, string | null | undefined, never>;
}

export interface PrincipalTable {
  id: string;
  label: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface GroupTable {
  name: string;
  label: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface MembershipTable {
  group_name: string;
  principal_id: string;
  added_at: ColumnType<Date, Date | undefined, never>;
}

export interface GrantTable {
  subject_kind: "key" | "person" | "group";
  subject_id: string;
  scope: string;
  tokens: string[];
  expires_at: Date | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** Announcements written with the change they announce, deleted once NATS has them. */
export interface OutboxTable {
  id: string;
  seq: Generated<string>;
  event: ColumnType<CredentialChanged, string, string>;
  created_at: ColumnType<Date, Date | undefined, never>;
  attempts: ColumnType<number, number | undefined, number>;
}

/** A sign-in of a command-line client (npm, svc) waiting for its person to confirm it in the console. */
export interface LoginTable {
  /** What the person sees and types: short, in the login URL. */
  code: string;
  /** SHA-256 of the secret only the client that started the sign-in holds (its done URL). */
  done_hash: string;
  client: "npm" | "svc";
  label: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  expires_at: Date;
  /** Set when the person confirmed it. */
  person: string | null;
}

export interface AuthDatabase {
  logins: LoginTable;
  outbox: OutboxTable;
  credentials: CredentialTable;
  grants: GrantTable;
  principals: PrincipalTable;
  groups: GroupTable;
  memberships: MembershipTable;
}
