import type { ColumnType } from "kysely";

export const SCHEMA = "admin";

export interface RateLimitTable {
  tenant: string;
  requests_per_minute: number;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface AdminDatabase {
  rate_limits: RateLimitTable;
}
