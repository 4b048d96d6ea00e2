import type { ColumnType } from "kysely";

export const SCHEMA = "console";

/** A console session: only the SHA-256 of the cookie value is kept, never the value. */
export interface SessionTable {
  id: string;
  tenant: string;
  person_id: string;
  csrf: string;
  created_at: ColumnType<Date, Date | undefined, never>;
  /** The end of the session's lifetime, whatever its use. */
  expires_at: Date;
  last_seen_at: ColumnType<Date, Date | undefined, Date>;
  ended_at: ColumnType<Date | null, never, Date>;
  /** The notice the session's next page shows once, until `notice_until`. */
  notice: ColumnType<string | null, never, string | null>;
  notice_until: ColumnType<Date | null, never, Date | null>;
}

/** A sign-in under way at a provider: what the callback must find and check (one use, minutes long). */
export interface SignInTable {
  /** SHA-256 of the `state` value the browser carries in its sign-in cookie and the provider returns. */
  id: string;
  provider: string;
  nonce: string;
  code_verifier: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface ConsoleDatabase {
  sessions: SessionTable;
  sign_ins: SignInTable;
}
