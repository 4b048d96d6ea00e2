import type { Kysely, Migration } from "kysely";
import { sql } from "kysely";
import type pg from "pg";
import { escapeIdentifier } from "pg";
import { lockKey } from "../store/metadata-store.js";
import { SCHEMA } from "../store/schema.js";

const T = (table: string) => `${escapeIdentifier(SCHEMA)}.${escapeIdentifier(table)}`;

/**
 * The build caches' tables (docs/integration/build-caches.md): one row per cache (its caps and
 * the bytes it holds, kept with each change so a write knows at once whether to evict), and one
 * per entry, by key, naming its blob. Entries are references like the path index's rows: a
 * reclaim never removes a blob an entry holds (metadata-store.ts `referenced`).
 */
export const buildCacheMigrations: Record<string, Migration> = {
  "0022_build_caches": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      // max_bytes / max_entry_bytes null: svc.build-cache.max-bytes / svc.build-cache.max-entry-bytes as they are now.
      await s
        .createTable("build_caches")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("max_bytes", "bigint")
        .addColumn("max_entry_bytes", "bigint")
        .addColumn("used_bytes", "bigint", (c) => c.notNull().defaultTo(0))
        .addColumn("entries", "bigint", (c) => c.notNull().defaultTo(0))
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await s
        .createTable("build_cache_entries")
        .addColumn("cache", "text", (c) => c.notNull().references(`${SCHEMA}.build_caches.name`).onDelete("cascade"))
        .addColumn("key", "text", (c) => c.notNull())
        .addColumn("sha256", "text", (c) => c.notNull())
        .addColumn("size", "bigint", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("used_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("build_cache_entries_pk", ["cache", "key"])
        .execute();
      // Eviction takes the least recently used first; a reclaim asks whether any entry holds a blob.
      await s.createIndex("build_cache_entries_by_use").on("build_cache_entries").columns(["cache", "used_at", "key"]).execute();
      await s.createIndex("build_cache_entries_by_sha256").on("build_cache_entries").column("sha256").execute();
    },
  },
};

export interface BuildCacheRow {
  name: string;
  /** Null: the default cap (svc.build-cache.max-bytes). */
  maxBytes: number | null;
  maxEntryBytes: number | null;
  usedBytes: number;
  entries: number;
  created: Date;
}

export interface EntryRow {
  sha256: string;
  size: number;
}

/** What a write did: the entries it evicted (their blobs are released by the caller once it committed). */
export interface PutOutcome {
  created: boolean;
  evicted: { key: string; sha256: string; size: number }[];
  /** The blob this key held before, when the write replaced it with other content. */
  replaced?: string;
}

const cacheOf = (r: Record<string, unknown>): BuildCacheRow => ({
  name: r.name as string,
  maxBytes: r.max_bytes === null ? null : Number(r.max_bytes),
  maxEntryBytes: r.max_entry_bytes === null ? null : Number(r.max_entry_bytes),
  usedBytes: Number(r.used_bytes),
  entries: Number(r.entries),
  created: r.created_at as Date,
});

/** Entries evicted per statement while a cache is over its cap. */
const EVICT_BATCH = 100;

export function buildCacheStoreFactory(pool: pg.Pool) {
  const inTransaction = async <R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R> => {
    const client = await pool.connect();
    try {
      await client.query("begin");
      const out = await fn(client);
      await client.query("commit");
      return out;
    } catch (err) {
      await client.query("rollback").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  };

  /**
   * Evicts the least recently used entries of a cache (ties by key; never `keep`) until it holds
   * no more than `cap`, and writes its byte and entry counts. The caller holds the cache row's lock.
   */
  const evict = async (client: pg.PoolClient, cache: string, now: { used: number; entries: number }, cap: number, keep = ""): Promise<PutOutcome["evicted"]> => {
    let { used, entries } = now;
    const evicted: PutOutcome["evicted"] = [];
    while (used > cap) {
      const candidates = await client.query(
        `select key, sha256, size from ${T("build_cache_entries")} where cache = $1 and key <> $2 order by used_at, key limit $3`,
        [cache, keep, EVICT_BATCH],
      );
      const chosen: PutOutcome["evicted"] = [];
      for (const c of candidates.rows as { key: string; sha256: string; size: string }[]) {
        if (used <= cap) break;
        chosen.push({ key: c.key, sha256: c.sha256, size: Number(c.size) });
        used -= Number(c.size);
        entries--;
      }
      if (chosen.length === 0) break;
      await client.query(`delete from ${T("build_cache_entries")} where cache = $1 and key = any($2::text[])`, [cache, chosen.map((c) => c.key)]);
      evicted.push(...chosen);
    }
    await client.query(`update ${T("build_caches")} set used_bytes = $2, entries = $3 where name = $1`, [cache, used, entries]);
    return evicted;
  };

  return {
    async list(): Promise<BuildCacheRow[]> {
      const r = await pool.query(`select * from ${T("build_caches")} order by name`);
      return r.rows.map(cacheOf);
    },

    async find(name: string): Promise<BuildCacheRow | undefined> {
      const r = await pool.query(`select * from ${T("build_caches")} where name = $1`, [name]);
      return r.rows[0] ? cacheOf(r.rows[0] as Record<string, unknown>) : undefined;
    },

    /** Creates a cache; undefined when one of that name exists. */
    async create(name: string, caps: { maxBytes: number | null; maxEntryBytes: number | null }): Promise<BuildCacheRow | undefined> {
      const r = await pool.query(`insert into ${T("build_caches")} (name, max_bytes, max_entry_bytes) values ($1, $2, $3) on conflict (name) do nothing returning *`, [name, caps.maxBytes, caps.maxEntryBytes]);
      return r.rows[0] ? cacheOf(r.rows[0] as Record<string, unknown>) : undefined;
    },

    /** Changes a cache's caps (a field left undefined stays); undefined when there is no such cache. */
    async update(name: string, caps: { maxBytes?: number | null; maxEntryBytes?: number | null }): Promise<BuildCacheRow | undefined> {
      const r = await pool.query(
        `update ${T("build_caches")} set max_bytes = case when $2 then $3::bigint else max_bytes end, max_entry_bytes = case when $4 then $5::bigint else max_entry_bytes end where name = $1 returning *`,
        [name, caps.maxBytes !== undefined, caps.maxBytes ?? null, caps.maxEntryBytes !== undefined, caps.maxEntryBytes ?? null],
      );
      return r.rows[0] ? cacheOf(r.rows[0] as Record<string, unknown>) : undefined;
    },

    /** Brings a cache within its cap now (after the cap was lowered): the entries evicted. */
    async trim(cache: string, capOf: (row: BuildCacheRow) => number): Promise<PutOutcome["evicted"]> {
      return inTransaction(async (client) => {
        const locked = await client.query(`select * from ${T("build_caches")} where name = $1 for update`, [cache]);
        if (!locked.rows[0]) return [];
        const row = cacheOf(locked.rows[0] as Record<string, unknown>);
        return row.usedBytes > capOf(row) ? evict(client, cache, { used: row.usedBytes, entries: row.entries }, capOf(row)) : [];
      });
    },

    /** Removes a cache and its entries; their blobs, for the caller to release. Undefined when there was none. */
    async remove(name: string): Promise<string[] | undefined> {
      return inTransaction(async (client) => {
        const gone = await client.query(`select 1 from ${T("build_caches")} where name = $1 for update`, [name]);
        if (gone.rowCount === 0) return undefined;
        const blobs = await client.query(`delete from ${T("build_cache_entries")} where cache = $1 returning sha256`, [name]);
        await client.query(`delete from ${T("build_caches")} where name = $1`, [name]);
        return [...new Set(blobs.rows.map((r: { sha256: string }) => r.sha256))];
      });
    },

    /** An entry, its use recorded at once (a read counts as a use for eviction); undefined on a miss. */
    async use(cache: string, key: string): Promise<EntryRow | undefined> {
      const r = await pool.query(`update ${T("build_cache_entries")} set used_at = clock_timestamp() where cache = $1 and key = $2 returning sha256, size`, [cache, key]);
      const row = r.rows[0] as { sha256: string; size: string } | undefined;
      return row ? { sha256: row.sha256, size: Number(row.size) } : undefined;
    },

    /** An entry, without recording a use (a read-only node); undefined on a miss. */
    async peek(cache: string, key: string): Promise<EntryRow | undefined> {
      const r = await pool.query(`select sha256, size from ${T("build_cache_entries")} where cache = $1 and key = $2`, [cache, key]);
      const row = r.rows[0] as { sha256: string; size: string } | undefined;
      return row ? { sha256: row.sha256, size: Number(row.size) } : undefined;
    },

    /** Drops an entry whose blob is gone (a repair walk removed it as corrupt), if it still names that blob. */
    async forgetEntry(cache: string, key: string, sha256: string): Promise<void> {
      await inTransaction(async (client) => {
        const r = await client.query(`delete from ${T("build_cache_entries")} where cache = $1 and key = $2 and sha256 = $3 returning size`, [cache, key, sha256]);
        const size = (r.rows[0] as { size: string } | undefined)?.size;
        if (size !== undefined) await client.query(`update ${T("build_caches")} set used_bytes = used_bytes - $2, entries = entries - 1 where name = $1`, [cache, size]);
      });
    },

    /** Removes an entry; false when there was none. Its blob, for the caller to release, when there was. */
    async removeEntry(cache: string, key: string): Promise<string | undefined> {
      return inTransaction(async (client) => {
        await client.query(`select 1 from ${T("build_caches")} where name = $1 for update`, [cache]);
        const r = await client.query(`delete from ${T("build_cache_entries")} where cache = $1 and key = $2 returning sha256, size`, [cache, key]);
        const row = r.rows[0] as { sha256: string; size: string } | undefined;
        if (!row) return undefined;
        await client.query(`update ${T("build_caches")} set used_bytes = used_bytes - $2, entries = entries - 1 where name = $1`, [cache, row.size]);
        return row.sha256;
      });
    },

    /**
     * Records that `key` holds the blob `entry`, creating the cache with the default caps when it
     * is new, then evicts the least recently used entries (never this one) until the cache is
     * within `maxBytes(cache)`. Under the cache row's lock, so writes to one cache from every
     * node take turns and its byte count stays exact; under the blob's lock, shared, so no
     * reclaim removes the blob meanwhile. `ensureBlob` (run under that lock) commits the blob
     * again if a reclaim took it since it was staged.
     */
    async put(cache: string, key: string, entry: EntryRow, capOf: (row: BuildCacheRow) => number, ensureBlob: () => Promise<void>): Promise<PutOutcome> {
      return inTransaction(async (client) => {
        await client.query(`insert into ${T("build_caches")} (name) values ($1) on conflict (name) do nothing`, [cache]);
        const locked = await client.query(`select * from ${T("build_caches")} where name = $1 for update`, [cache]);
        const row = cacheOf(locked.rows[0] as Record<string, unknown>);
        await client.query(`select pg_advisory_xact_lock_shared(${lockKey("blob", entry.sha256)})`);
        await ensureBlob();
        const before = await client.query(`select sha256, size from ${T("build_cache_entries")} where cache = $1 and key = $2`, [cache, key]);
        const previous = before.rows[0] as { sha256: string; size: string } | undefined;
        await client.query(
          `insert into ${T("build_cache_entries")} (cache, key, sha256, size, used_at) values ($1, $2, $3, $4, clock_timestamp())
           on conflict (cache, key) do update set sha256 = excluded.sha256, size = excluded.size, created_at = now(), used_at = clock_timestamp()`,
          [cache, key, entry.sha256, entry.size],
        );
        const used = row.usedBytes + entry.size - (previous ? Number(previous.size) : 0);
        const entries = row.entries + (previous ? 0 : 1);
        const evicted = await evict(client, cache, { used, entries }, capOf(row), key);
        return { created: !previous, evicted, ...(previous && previous.sha256 !== entry.sha256 ? { replaced: previous.sha256 } : {}) };
      });
    },
  };
}

export type BuildCacheStore = ReturnType<typeof buildCacheStoreFactory>;
