import { sql, type Selectable } from "kysely";
import type { ExportState, ExportView } from "@svc/contracts";
import type { Db } from "./metadata-store.js";
import { SCHEMA, type ExportTable } from "./schema.js";

export type { ExportState };
export type Refusal = ExportView["refusals"][number];

/** The contract's view of an export with its times as dates, and the heartbeat the API does not show. */
export interface ExportRecord extends Omit<ExportView, "started" | "ended"> {
  started: Date;
  ended: Date | null;
  heartbeat: Date;
}

export type ExportProgress = Pick<ExportRecord, "total" | "copied" | "skipped" | "refused" | "refusals">;

type Row = Selectable<ExportTable>;

const toRecord = (r: Row): ExportRecord => ({
  id: r.id,
  source: r.source,
  target: r.target,
  format: r.format,
  state: r.state as ExportState,
  actor: r.actor,
  total: r.total,
  copied: r.copied,
  skipped: r.skipped,
  refused: r.refused,
  refusals: r.refusals,
  detail: r.detail,
  started: r.started_at,
  heartbeat: r.heartbeat_at,
  ended: r.ended_at,
});

const COLUMNS = ["id", "source", "target", "format", "state", "actor", "total", "copied", "skipped", "refused", "refusals", "detail", "started_at", "heartbeat_at", "ended_at"] as const;

/** Export records in Postgres, so an accepted export's record survives a restart of the process that ran it. */
export function exportStoreFactory(root: Db) {
  const db = () => root.withSchema(SCHEMA);
  return {
    async create(e: { id: string; source: string; target: string; format: string; actor: string; total: number }): Promise<ExportRecord> {
      const row = await db()
        .insertInto("exports")
        .values({ ...e, state: "running" })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow();
      return toRecord(row);
    },

    async find(source: string, id: string): Promise<ExportRecord | undefined> {
      const row = await db().selectFrom("exports").select(COLUMNS).where("id", "=", id).where("source", "=", source).executeTakeFirst();
      return row ? toRecord(row) : undefined;
    },

    /** A source's exports, newest first; `before`: the id of the last one of the previous page. */
    async list(source: string, limit: number, before?: string): Promise<ExportRecord[]> {
      let q = db().selectFrom("exports").select(COLUMNS).where("source", "=", source);
      if (before !== undefined) {
        q = q.where(sql<boolean>`(started_at, id) < (select started_at, id from ${sql.id(SCHEMA, "exports")} where id = ${before}::uuid)`);
      }
      const rows = await q.orderBy("started_at", "desc").orderBy("id", "desc").limit(limit).execute();
      return rows.map(toRecord);
    },

    /** Progress so far; also the heartbeat that says a process still works on it. */
    async progress(id: string, p: ExportProgress): Promise<void> {
      await db()
        .updateTable("exports")
        .set({ ...p, refusals: JSON.stringify(p.refusals), heartbeat_at: new Date() })
        .where("id", "=", id)
        .where("state", "=", "running")
        .execute();
    },

    async finish(id: string, state: Exclude<ExportState, "running">, p: ExportProgress, detail: string | null): Promise<void> {
      const now = new Date();
      await db()
        .updateTable("exports")
        .set({ ...p, refusals: JSON.stringify(p.refusals), state, detail, heartbeat_at: now, ended_at: now })
        .where("id", "=", id)
        .execute();
    },

    /** Marks as interrupted every running export whose heartbeat is older than `staleMs`; answers how many. */
    async markInterrupted(staleMs: number, detail: string): Promise<number> {
      const r = await db()
        .updateTable("exports")
        .set({ state: "interrupted", detail, ended_at: sql`heartbeat_at` })
        .where("state", "=", "running")
        .where("heartbeat_at", "<", new Date(Date.now() - staleMs))
        .executeTakeFirst();
      return Number(r.numUpdatedRows);
    },
  };
}
export type ExportStore = ReturnType<typeof exportStoreFactory>;
