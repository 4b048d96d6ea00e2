import { sql, type Kysely } from "kysely";
import type { WalkProblems } from "@svc/contracts";
import { SCHEMA, STORE_LEASE, type Outcome, type WalkerDatabase } from "./schema.js";

export interface Walk {
  name: string;
  schedule: string;
  enabled: boolean;
  jobs: string[];
}

export interface RunRecord {
  id: string;
  walk: string;
  trigger: "schedule" | "manual";
  scheduledFor: Date | null;
  holder: string;
  jobs: string[];
  started: Date;
  ended: Date | null;
  outcome: Outcome;
  counts: Record<string, Record<string, number>>;
  /** Index rows seen. */
  entries: number;
  /** Bytes the index rows seen hold. */
  bytes: number;
  /** Blobs of the store's listing seen. */
  blobs: number;
  /** How long it took (so far, while running); null when it never went over the store. */
  durationMs: number | null;
  reference: string | null;
  detail: string | null;
  problems: WalkProblems;
}

/** What a run has seen and done so far. */
export interface RunProgress {
  counts: Record<string, Record<string, number>>;
  entries: number;
  bytes: number;
  blobs: number;
  durationMs: number;
  problems: WalkProblems;
}

type RunRow = {
  id: string;
  walk: string;
  trigger: "schedule" | "manual";
  scheduled_for: Date | null;
  holder: string;
  jobs: string[];
  started_at: Date;
  ended_at: Date | null;
  outcome: Outcome;
  counts: Record<string, Record<string, number>>;
  entries: string;
  bytes: string;
  blobs: string;
  duration_ms: string | null;
  error_reference: string | null;
  detail: string | null;
  problems: WalkProblems;
};

const toRun = (r: RunRow): RunRecord => ({
  id: String(r.id),
  walk: r.walk,
  trigger: r.trigger,
  scheduledFor: r.scheduled_for,
  holder: r.holder,
  jobs: r.jobs,
  started: r.started_at,
  ended: r.ended_at,
  outcome: r.outcome,
  counts: r.counts,
  entries: Number(r.entries),
  bytes: Number(r.bytes),
  blobs: Number(r.blobs),
  durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
  reference: r.error_reference,
  detail: r.detail,
  problems: r.problems,
});

const RUN_COLUMNS = ["id", "walk", "trigger", "scheduled_for", "holder", "jobs", "started_at", "ended_at", "outcome", "counts", "entries", "bytes", "blobs", "duration_ms", "error_reference", "detail", "problems"] as const;
const WALK_COLUMNS = ["name", "schedule", "enabled", "jobs"] as const;

/** Walk definitions, run records and leases (schema `walker`). Times come from the database clock. */
export function walkStoreFactory(root: Kysely<WalkerDatabase>) {
  const db = () => root.withSchema(SCHEMA);
  return {
    async listWalks(after: string | undefined, limit: number): Promise<Walk[]> {
      let q = db().selectFrom("walks").select(WALK_COLUMNS);
      if (after !== undefined) q = q.where("name", ">", after);
      return q.orderBy("name").limit(limit).execute();
    },
    async enabledWalks(): Promise<Walk[]> {
      return db().selectFrom("walks").select(WALK_COLUMNS).where("enabled", "=", true).orderBy("name").execute();
    },
    async getWalk(name: string): Promise<Walk | undefined> {
      return db().selectFrom("walks").select(WALK_COLUMNS).where("name", "=", name).executeTakeFirst();
    },
    /** false when a walk of that name exists. */
    async addWalk(w: Walk): Promise<boolean> {
      const r = await db()
        .insertInto("walks")
        .values({ name: w.name, schedule: w.schedule, enabled: w.enabled, jobs: w.jobs })
        .onConflict((oc) => oc.column("name").doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },
    async updateWalk(name: string, change: Partial<Omit<Walk, "name">>): Promise<Walk | undefined> {
      return db()
        .updateTable("walks")
        .set({ ...change, updated_at: new Date() })
        .where("name", "=", name)
        .returning(WALK_COLUMNS)
        .executeTakeFirst();
    },
    /** Removes a walk and its run records. */
    async removeWalk(name: string): Promise<boolean> {
      return root.transaction().execute(async (tx) => {
        const r = await tx.withSchema(SCHEMA).deleteFrom("walks").where("name", "=", name).executeTakeFirst();
        if (Number(r.numDeletedRows) === 0) return false;
        await tx.withSchema(SCHEMA).deleteFrom("runs").where("walk", "=", name).execute();
        return true;
      });
    },

    /**
     * Claims one scheduled instant of a walk for this process: true for exactly one replica,
     * and never for an instant computed from a schedule that has since been edited.
     */
    async claimFire(name: string, schedule: string, at: Date): Promise<boolean> {
      const r = await db()
        .updateTable("walks")
        .set({ last_fire_at: at })
        .where("name", "=", name)
        .where("enabled", "=", true)
        .where("schedule", "=", schedule)
        .where((eb) => eb.or([eb("last_fire_at", "is", null), eb("last_fire_at", "<", at)]))
        .executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    async startRun(r: { walk: string; trigger: "schedule" | "manual"; scheduledFor: Date | null; holder: string; jobs: string[] }): Promise<RunRecord> {
      const row = await db()
        .insertInto("runs")
        .values({ walk: r.walk, trigger: r.trigger, scheduled_for: r.scheduledFor, holder: r.holder, jobs: r.jobs, outcome: "running", counts: "{}", ended_at: null, error_reference: null })
        .returning(RUN_COLUMNS)
        .executeTakeFirstOrThrow();
      return toRun(row);
    },
    /** A scheduled instant that did not go over the store: its record, begun and ended at once. */
    async skipRun(r: { walk: string; scheduledFor: Date; holder: string; jobs: string[]; detail: string }): Promise<RunRecord> {
      const row = await db()
        .insertInto("runs")
        .values({ walk: r.walk, trigger: "schedule", scheduled_for: r.scheduledFor, holder: r.holder, jobs: r.jobs, outcome: "skipped", counts: "{}", ended_at: sql<Date>`now()`, error_reference: null, detail: r.detail })
        .returning(RUN_COLUMNS)
        .executeTakeFirstOrThrow();
      return toRun(row);
    },
    /** The runs of the store lease's live holder (a pass of walks due together), oldest first. */
    async runningRuns(): Promise<RunRecord[]> {
      const rows = await db()
        .selectFrom("runs")
        .select(RUN_COLUMNS)
        .where("outcome", "=", "running")
        .where("holder", "in", (eb) => eb.selectFrom("leases").select("holder").where("name", "=", STORE_LEASE).where("expires_at", ">", sql<Date>`now()`))
        .orderBy("id")
        .execute();
      return rows.map(toRun);
    },
    async progress(id: string, p: RunProgress): Promise<void> {
      await db().updateTable("runs").set({ counts: JSON.stringify(p.counts), entries: p.entries, bytes: p.bytes, blobs: p.blobs, duration_ms: p.durationMs, problems: JSON.stringify(p.problems) }).where("id", "=", id).where("outcome", "=", "running").execute();
    },
    async finishRun(id: string, p: RunProgress & { outcome: Outcome; reference: string | null }): Promise<RunRecord | undefined> {
      const row = await db()
        .updateTable("runs")
        .set({ outcome: p.outcome, counts: JSON.stringify(p.counts), entries: p.entries, bytes: p.bytes, blobs: p.blobs, duration_ms: p.durationMs, problems: JSON.stringify(p.problems), error_reference: p.reference, ended_at: sql<Date>`now()` })
        .where("id", "=", id)
        .returning(RUN_COLUMNS)
        .executeTakeFirst();
      return row ? toRun(row) : undefined;
    },
    /** Keeps the newest `keep` run records of a walk (a seconds schedule would pile them up). */
    async pruneRuns(walk: string, keep: number): Promise<void> {
      await sql`
        delete from ${sql.id(SCHEMA, "runs")} where walk = ${walk} and outcome <> 'running' and id < (
          select id from ${sql.id(SCHEMA, "runs")} where walk = ${walk} order by id desc offset ${keep - 1} limit 1)`.execute(root);
    },
    async listRuns(walk: string, after: string | undefined, limit: number): Promise<RunRecord[]> {
      let q = db().selectFrom("runs").select(RUN_COLUMNS).where("walk", "=", walk);
      if (after !== undefined) q = q.where("id", ">", after);
      const rows = await q.orderBy("id").limit(limit).execute();
      return rows.map(toRun);
    },
    async hasRuns(walk: string): Promise<boolean> {
      return (await db().selectFrom("runs").select("id").where("walk", "=", walk).limit(1).executeTakeFirst()) !== undefined;
    },
    async lastRuns(walks: string[]): Promise<Map<string, RunRecord>> {
      if (walks.length === 0) return new Map();
      const rows = await db()
        .selectFrom("runs")
        .select(RUN_COLUMNS)
        .where("id", "in", (eb) => eb.selectFrom("runs").select((e) => e.fn.max("id").as("id")).where("walk", "in", walks).groupBy("walk"))
        .execute();
      return new Map(rows.map((r) => [r.walk, toRun(r)]));
    },
    /**
     * Marks "running" records whose holder no longer holds the store's lease (a process that
     * died mid-walk) as interrupted; returns how many.
     */
    async markInterrupted(): Promise<number> {
      const r = await sql`
        update ${sql.id(SCHEMA, "runs")} as r set outcome = 'interrupted', ended_at = now()
        where r.outcome = 'running' and not exists (
          select 1 from ${sql.id(SCHEMA, "leases")} as l where l.name = ${STORE_LEASE} and l.holder = r.holder and l.expires_at > now())`.execute(root);
      return Number(r.numAffectedRows ?? 0);
    },

    // Leases: taken only when free or expired (never twice by one holder: two requests in one
    // process must not both walk); kept alive by renewal; deleted at the end.
    async takeLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
      const r = await sql<{ holder: string }>`
        insert into ${sql.id(SCHEMA, "leases")} as l (name, holder, acquired_at, expires_at)
        values (${name}, ${holder}, now(), now() + ${ttlMs} * interval '1 millisecond')
        on conflict (name) do update set holder = excluded.holder, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
        where l.expires_at < now()
        returning l.holder`.execute(root);
      return r.rows.length === 1;
    },
    async renewLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
      const r = await sql`
        update ${sql.id(SCHEMA, "leases")} set expires_at = now() + ${ttlMs} * interval '1 millisecond'
        where name = ${name} and holder = ${holder} and expires_at > now()`.execute(root);
      return Number(r.numAffectedRows ?? 0) === 1;
    },
    async dropLease(name: string, holder: string): Promise<void> {
      await db().deleteFrom("leases").where("name", "=", name).where("holder", "=", holder).execute();
    },
  };
}
export type WalkStore = ReturnType<typeof walkStoreFactory>;
