import type { ColumnType, Generated } from "kysely";
import type { WalkProblems } from "@svc/contracts";

export const SCHEMA = "walker";

export interface WalkTable {
  name: string;
  schedule: string;
  enabled: boolean;
  jobs: string[];
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  /** The last scheduled instant some replica claimed: each instant runs once cluster-wide. */
  last_fire_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** `skipped`: a scheduled instant that found the store being walked already (see `detail`). */
export type Outcome = "running" | "succeeded" | "failed" | "interrupted" | "skipped";

/**
 * The one lease every walk takes: one pass over the store at a time cluster-wide, whichever
 * walk it is (two passes would race each other's removals and double the disk load).
 */
export const STORE_LEASE = "store";

export interface RunTable {
  id: Generated<string>;
  walk: string;
  trigger: "schedule" | "manual";
  scheduled_for: Date | null;
  /** The lease holder (process) that ran it. */
  holder: string;
  jobs: string[];
  started_at: ColumnType<Date, Date | undefined, never>;
  ended_at: Date | null;
  outcome: Outcome;
  counts: ColumnType<Record<string, Record<string, number>>, string, string>;
  /** Index rows seen. */
  entries: ColumnType<string, number | undefined, number>;
  /** Bytes the index rows seen hold. */
  bytes: ColumnType<string, number | undefined, number>;
  /** Blobs of the store's listing seen. */
  blobs: ColumnType<string, number | undefined, number>;
  /** How long the run has taken (so far, while running); null for a skipped instant and records from before it was kept. */
  duration_ms: ColumnType<string | null, number | null | undefined, number | null>;
  error_reference: string | null;
  /** Why a run did not go over the store (a skipped instant names the walk that held it). */
  detail: ColumnType<string | null, string | null | undefined, string | null>;
  /** Entries the run passed by (`WalkProblems`). */
  problems: ColumnType<WalkProblems, string | undefined, string>;
}

/** One row (`STORE_LEASE`) while some process walks the store; an expired row belongs to a dead holder. */
export interface LeaseTable {
  name: string;
  holder: string;
  acquired_at: Date;
  expires_at: Date;
}

export interface WalkerDatabase {
  walks: WalkTable;
  runs: RunTable;
  leases: LeaseTable;
}
