import { randomUUID } from "node:crypto";
import { sql, type Kysely, type Migration } from "kysely";
import type pg from "pg";
import { escapeIdentifier } from "pg";
import { lockKey } from "../store/metadata-store.js";
import { SCHEMA } from "../store/schema.js";
import type { Advisory, Level } from "./osv-records.js";

const T = (table: string) => `${escapeIdentifier(SCHEMA)}.${escapeIdentifier(table)}`;

/**
 * The gate's tables: advisory data per source (one row per OSV record, found by the packages it
 * names through a GIN index), each source's state, the deny list, and findings.
 */
export const gateMigrations: Record<string, Migration> = {
  "0010_gate": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      await s
        .createTable("gate_advisories")
        .addColumn("source", "text", (c) => c.notNull())
        .addColumn("id", "text", (c) => c.notNull())
        .addColumn("modified", "text", (c) => c.notNull())
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("level", "text")
        .addColumn("summary", "text", (c) => c.notNull())
        .addColumn("packages", sql`text[]`, (c) => c.notNull())
        .addColumn("affected", "jsonb", (c) => c.notNull())
        .addPrimaryKeyConstraint("gate_advisories_pk", ["source", "id"])
        .execute();
      await sql`create index gate_advisories_by_package on ${sql.id(SCHEMA, "gate_advisories")} using gin (packages)`.execute(db);
      await s
        .createTable("gate_sources")
        .addColumn("source", "text", (c) => c.primaryKey())
        .addColumn("records", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("loaded_at", "timestamptz")
        .addColumn("attempted_at", "timestamptz", (c) => c.notNull())
        .addColumn("error", "text")
        .execute();
      await s
        .createTable("gate_deny_list")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("ecosystem", "text", (c) => c.notNull())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("versions", "text", (c) => c.notNull())
        .addColumn("reason", "text", (c) => c.notNull())
        .addColumn("created_by", "text", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await s.createIndex("gate_deny_list_by_package").on("gate_deny_list").columns(["ecosystem", "name"]).execute();
      await s
        .createTable("gate_findings")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("path", "text", (c) => c.notNull())
        .addColumn("ecosystem", "text", (c) => c.notNull())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("version", "text", (c) => c.notNull())
        .addColumn("type", "text", (c) => c.notNull())
        .addColumn("level", "text")
        .addColumn("advisory", "text", (c) => c.notNull())
        .addColumn("summary", "text", (c) => c.notNull())
        .addColumn("action", "text", (c) => c.notNull())
        .addColumn("found_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("data_loaded_at", "timestamptz")
        .addColumn("downloads", "bigint", (c) => c.notNull().defaultTo(0))
        .addColumn("last_downloaded_at", "timestamptz")
        .addUniqueConstraint("gate_findings_once", ["repository", "path", "advisory"])
        .execute();
      await s.createIndex("gate_findings_by_repository").on("gate_findings").columns(["repository", "found_at"]).execute();
    },
  },
  "0014_gate_triage_refusals": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      // A deny list entry's stored versions are checked after it is added; until that check
      // finished (a restart in between), checked_at stays null and the next start checks them.
      await s.alterTable("gate_deny_list").addColumn("checked_at", "timestamptz").execute();
      // A finding's triage: open until an administrator confirms it (a real problem) or dismisses it (not one).
      await s
        .alterTable("gate_findings")
        .addColumn("status", "text", (c) => c.notNull().defaultTo("open"))
        .addColumn("triaged_by", "text")
        .addColumn("triaged_at", "timestamptz")
        .addColumn("note", "text")
        .execute();
      // The refusal log: what the gate refused (BLOCK), never stored, so not a finding of a file.
      await s
        .createTable("gate_refusals")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("path", "text", (c) => c.notNull())
        .addColumn("ecosystem", "text", (c) => c.notNull())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("version", "text", (c) => c.notNull())
        .addColumn("reason", "text", (c) => c.notNull())
        .addColumn("principal", "text", (c) => c.notNull())
        .addColumn("refused_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await s.createIndex("gate_refusals_by_time").on("gate_refusals").columns(["refused_at", "id"]).execute();
      await s.createIndex("gate_refusals_by_repository").on("gate_refusals").columns(["repository", "refused_at"]).execute();
    },
  },
};

export type FindingStatus = "open" | "confirmed" | "dismissed";
export const FINDING_STATUSES: readonly FindingStatus[] = ["open", "confirmed", "dismissed"];

/** A refused version, as the refusal log keeps it. */
export interface Refusal {
  id: string;
  repository: string;
  path: string;
  ecosystem: string;
  name: string;
  version: string;
  reason: string;
  principal: string;
  refused: Date;
}

export interface StoredAdvisory {
  id: string;
  kind: "malware" | "vulnerability";
  level: Level | undefined;
  summary: string;
  affected: Advisory["affected"];
}

export interface SourceState {
  source: string;
  records: number;
  loadedAt: Date | null;
  attemptedAt: Date;
  error: string | null;
}

export interface DenyEntry {
  id: string;
  ecosystem: string;
  name: string;
  versions: string;
  reason: string;
  createdBy: string;
  created: Date;
}

export interface FindingRow {
  id: string;
  repository: string;
  path: string;
  ecosystem: string;
  name: string;
  version: string;
  type: "malware" | "vulnerability" | "deny-list";
  level: Level | null;
  advisory: string;
  summary: string;
  action: string;
  found: Date;
  dataLoaded: Date | null;
  downloads: number;
  lastDownloaded: Date | null;
  status: FindingStatus;
  triagedBy: string | null;
  triaged: Date | null;
  note: string | null;
}
export type NewFinding = Omit<FindingRow, "id" | "found" | "status" | "triagedBy" | "triaged" | "note">;

/** The ids of deny list entries and findings. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Rows written per statement when a source is loaded. */
const BATCH = 500;

export function gateStoreFactory(pool: pg.Pool) {
  return {
    /** The advisories naming a package (`ecosystem:name`). */
    async advisoriesOf(key: string): Promise<StoredAdvisory[]> {
      const r = await pool.query(`select distinct on (id) id, kind, level, summary, affected from ${T("gate_advisories")} where packages @> array[$1]::text[] order by id, source`, [key]);
      return r.rows.map((x) => ({ id: x.id, kind: x.kind, level: x.level ?? undefined, summary: x.summary, affected: x.affected }));
    },

    /** The advisories naming any of the packages (`ecosystem:name` each), by package; one query. */
    async advisoriesOfMany(keys: readonly string[]): Promise<Map<string, StoredAdvisory[]>> {
      const out = new Map<string, StoredAdvisory[]>();
      if (keys.length === 0) return out;
      const wanted = new Set(keys);
      const r = await pool.query(`select distinct on (id) id, kind, level, summary, affected, packages from ${T("gate_advisories")} where packages && $1::text[] order by id, source`, [[...wanted]]);
      for (const x of r.rows as { id: string; kind: StoredAdvisory["kind"]; level: Level | null; summary: string; affected: StoredAdvisory["affected"]; packages: string[] }[]) {
        const advisory: StoredAdvisory = { id: x.id, kind: x.kind, level: x.level ?? undefined, summary: x.summary, affected: x.affected };
        for (const key of x.packages) if (wanted.has(key)) out.set(key, [...(out.get(key) ?? []), advisory]);
      }
      return out;
    },

    /**
     * Makes a source's rows the records given, in one transaction: what is new or whose `modified`
     * changed is answered (for the retroactive check), what the source no longer has goes.
     */
    async replaceSource(source: string, records: Iterable<Advisory>): Promise<Advisory[]> {
      const client = await pool.connect();
      const changed: Advisory[] = [];
      try {
        await client.query("begin");
        await client.query(`create temporary table gate_seen (id text primary key) on commit drop`);
        let batch: Advisory[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const rows = batch.map((a) => ({ id: a.id, modified: a.modified, kind: a.kind, level: a.level ?? null, summary: a.summary, packages: a.packages, affected: a.affected }));
          const byId = new Map(batch.map((a) => [a.id, a]));
          batch = [];
          await client.query(`insert into gate_seen select id from jsonb_to_recordset($1::jsonb) as x(id text) on conflict do nothing`, [JSON.stringify(rows)]);
          const r = await client.query(
            `insert into ${T("gate_advisories")} (source, id, modified, kind, level, summary, packages, affected)
             select $1, x.id, x.modified, x.kind, x.level, x.summary, array(select jsonb_array_elements_text(x.packages)), x.affected
             from jsonb_to_recordset($2::jsonb) as x(id text, modified text, kind text, level text, summary text, packages jsonb, affected jsonb)
             on conflict (source, id) do update set modified = excluded.modified, kind = excluded.kind, level = excluded.level, summary = excluded.summary, packages = excluded.packages, affected = excluded.affected
             where ${T("gate_advisories")}.modified is distinct from excluded.modified or ${T("gate_advisories")}.affected is distinct from excluded.affected
             returning id`,
            [source, JSON.stringify(rows)],
          );
          for (const row of r.rows as { id: string }[]) {
            const a = byId.get(row.id);
            if (a) changed.push(a);
          }
        };
        let count = 0;
        for (const a of records) {
          batch.push(a);
          count++;
          if (batch.length >= BATCH) await flush();
        }
        await flush();
        await client.query(`delete from ${T("gate_advisories")} a where a.source = $1 and not exists (select 1 from gate_seen s where s.id = a.id)`, [source]);
        await client.query(
          `insert into ${T("gate_sources")} (source, records, loaded_at, attempted_at, error) values ($1, $2, now(), now(), null)
           on conflict (source) do update set records = excluded.records, loaded_at = excluded.loaded_at, attempted_at = excluded.attempted_at, error = null`,
          [source, count],
        );
        await client.query("commit");
        return changed;
      } catch (err) {
        await client.query("rollback").catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },

    /** A source that could not be read: its rows stay as they were, its state says why. */
    async sourceFailed(source: string, error: string): Promise<void> {
      await pool.query(
        `insert into ${T("gate_sources")} (source, attempted_at, error) values ($1, now(), $2)
         on conflict (source) do update set attempted_at = excluded.attempted_at, error = excluded.error`,
        [source, error],
      );
    },

    /** Drops the data of sources no longer configured. */
    async keepOnly(sources: readonly string[]): Promise<void> {
      await pool.query(`delete from ${T("gate_advisories")} where not (source = any($1::text[]))`, [sources]);
      await pool.query(`delete from ${T("gate_sources")} where not (source = any($1::text[]))`, [sources]);
    },

    async sources(): Promise<SourceState[]> {
      const r = await pool.query(`select source, records, loaded_at, attempted_at, error from ${T("gate_sources")} order by source`);
      return r.rows.map((x) => ({ source: x.source, records: x.records, loadedAt: x.loaded_at, attemptedAt: x.attempted_at, error: x.error }));
    },

    /** When the oldest configured source's data was loaded (the data's age), null before any was. */
    async loadedAt(): Promise<Date | null> {
      const r = await pool.query(`select min(loaded_at) as at from ${T("gate_sources")}`);
      return (r.rows[0]?.at as Date | null) ?? null;
    },

    async denyEntriesOf(ecosystem: string, name: string): Promise<DenyEntry[]> {
      const r = await pool.query(`select * from ${T("gate_deny_list")} where ecosystem = $1 and name = $2 order by created_at, id`, [ecosystem, name]);
      return r.rows.map(denyEntry);
    },

    async denyList(after: string | undefined, limit: number): Promise<DenyEntry[]> {
      const r = await pool.query(`select * from ${T("gate_deny_list")} where ($1::uuid is null or id > $1::uuid) order by id limit $2`, [after ?? null, limit]);
      return r.rows.map(denyEntry);
    },

    async addDenyEntry(e: Omit<DenyEntry, "id" | "created">): Promise<DenyEntry> {
      const r = await pool.query(`insert into ${T("gate_deny_list")} (id, ecosystem, name, versions, reason, created_by) values ($1, $2, $3, $4, $5, $6) returning *`, [randomUUID(), e.ecosystem, e.name, e.versions, e.reason, e.createdBy]);
      return denyEntry(r.rows[0]);
    },

    async removeDenyEntry(id: string): Promise<boolean> {
      const r = await pool.query(`delete from ${T("gate_deny_list")} where id = $1`, [id]);
      return (r.rowCount ?? 0) > 0;
    },

    /** Records findings not recorded before (one per path and advisory); answers those that are new. */
    async addFindings(findings: readonly NewFinding[]): Promise<FindingRow[]> {
      const added: FindingRow[] = [];
      for (const f of findings) {
        const r = await pool.query(
          `insert into ${T("gate_findings")} (id, repository, path, ecosystem, name, version, type, level, advisory, summary, action, data_loaded_at, downloads, last_downloaded_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) on conflict do nothing returning *`,
          [randomUUID(), f.repository, f.path, f.ecosystem, f.name, f.version, f.type, f.level, f.advisory, f.summary, f.action, f.dataLoaded, f.downloads, f.lastDownloaded],
        );
        if (r.rows[0]) added.push(findingRow(r.rows[0]));
      }
      return added;
    },

    /** Findings, newest first, a page after the finding `after` (its id); of one status if given. */
    async findings(opts: { repository?: string; status?: FindingStatus; after?: string; limit: number }): Promise<FindingRow[]> {
      const r = await pool.query(
        `select * from ${T("gate_findings")} f where ($1::text is null or f.repository = $1) and ($4::text is null or f.status = $4)
         and ($2::uuid is null or (f.found_at, f.id) < (select found_at, id from ${T("gate_findings")} where id = $2::uuid))
         order by f.found_at desc, f.id desc limit $3`,
        [opts.repository ?? null, opts.after ?? null, opts.limit, opts.status ?? null],
      );
      return r.rows.map(findingRow);
    },

    async finding(id: string): Promise<FindingRow | undefined> {
      const r = await pool.query(`select * from ${T("gate_findings")} where id = $1`, [id]);
      return r.rows[0] ? findingRow(r.rows[0]) : undefined;
    },

    /** Sets an open finding's triage: who, when, why; answers the finding as it is now, undefined when it is not open (any more). */
    async triage(id: string, status: Exclude<FindingStatus, "open">, by: string, note: string | null): Promise<FindingRow | undefined> {
      const r = await pool.query(`update ${T("gate_findings")} set status = $2, triaged_by = $3, triaged_at = now(), note = $4 where id = $1 and status = 'open' returning *`, [id, status, by, note]);
      return r.rows[0] ? findingRow(r.rows[0]) : undefined;
    },

    /** Deny list entries whose stored versions were not checked yet (added, then a restart before the check ended). */
    async uncheckedDenyEntries(): Promise<DenyEntry[]> {
      const r = await pool.query(`select * from ${T("gate_deny_list")} where checked_at is null order by created_at, id`);
      return r.rows.map(denyEntry);
    },

    async denyEntryChecked(id: string): Promise<void> {
      await pool.query(`update ${T("gate_deny_list")} set checked_at = now() where id = $1`, [id]);
    },

    async addRefusal(r: Omit<Refusal, "id" | "refused">): Promise<void> {
      await pool.query(`insert into ${T("gate_refusals")} (id, repository, path, ecosystem, name, version, reason, principal) values ($1, $2, $3, $4, $5, $6, $7, $8)`, [
        randomUUID(),
        r.repository,
        r.path,
        r.ecosystem,
        r.name,
        r.version,
        r.reason,
        r.principal,
      ]);
    },

    /**
     * Adds a refusal unless the same principal was refused the same file of the same repository
     * within the last `withinMs` (one client retrying is one entry): under an advisory lock on
     * that key, so two nodes refusing at once add one. True when it was added.
     */
    async addRefusalOnce(r: Omit<Refusal, "id" | "refused">, withinMs: number): Promise<boolean> {
      const client = await pool.connect();
      try {
        await client.query("begin");
        await client.query(`select pg_advisory_xact_lock(${lockKey("refusal", r.repository, r.path, r.principal)})`);
        const added = await client.query(
          `insert into ${T("gate_refusals")} (id, repository, path, ecosystem, name, version, reason, principal)
           select $1, $2, $3, $4, $5, $6, $7, $8 where not exists (
             select 1 from ${T("gate_refusals")} where repository = $2 and path = $3 and principal = $8 and refused_at > now() - make_interval(secs => $9::double precision / 1000))`,
          [randomUUID(), r.repository, r.path, r.ecosystem, r.name, r.version, r.reason, r.principal, withinMs],
        );
        await client.query("commit");
        return (added.rowCount ?? 0) > 0;
      } catch (err) {
        await client.query("rollback").catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },

    /** The refusal log, newest first, a page after the refusal `after` (its id). */
    async refusals(opts: { repository?: string; after?: string; limit: number }): Promise<Refusal[]> {
      const r = await pool.query(
        `select * from ${T("gate_refusals")} x where ($1::text is null or x.repository = $1)
         and ($2::uuid is null or (x.refused_at, x.id) < (select refused_at, id from ${T("gate_refusals")} where id = $2::uuid))
         order by x.refused_at desc, x.id desc limit $3`,
        [opts.repository ?? null, opts.after ?? null, opts.limit],
      );
      return r.rows.map((x) => ({
        id: x.id,
        repository: x.repository,
        path: x.path,
        ecosystem: x.ecosystem,
        name: x.name,
        version: x.version,
        reason: x.reason,
        principal: x.principal,
        refused: x.refused_at,
      }));
    },
  };
}

export type GateStore = ReturnType<typeof gateStoreFactory>;

const denyEntry = (x: Record<string, unknown>): DenyEntry => ({
  id: x.id as string,
  ecosystem: x.ecosystem as string,
  name: x.name as string,
  versions: x.versions as string,
  reason: x.reason as string,
  createdBy: x.created_by as string,
  created: x.created_at as Date,
});

const findingRow = (x: Record<string, unknown>): FindingRow => ({
  id: x.id as string,
  repository: x.repository as string,
  path: x.path as string,
  ecosystem: x.ecosystem as string,
  name: x.name as string,
  version: x.version as string,
  type: x.type as FindingRow["type"],
  level: (x.level as Level | null) ?? null,
  advisory: x.advisory as string,
  summary: x.summary as string,
  action: x.action as string,
  found: x.found_at as Date,
  dataLoaded: (x.data_loaded_at as Date | null) ?? null,
  downloads: Number(x.downloads),
  lastDownloaded: (x.last_downloaded_at as Date | null) ?? null,
  status: x.status as FindingStatus,
  triagedBy: (x.triaged_by as string | null) ?? null,
  triaged: (x.triaged_at as Date | null) ?? null,
  note: (x.note as string | null) ?? null,
});
