import { createHash } from "node:crypto";
import { sql, type Kysely } from "kysely";
import pg from "pg";
import { isRepositoryName } from "@svc/grants";
import { kyselyOn } from "@svc/kit";
import { liveChunk } from "../formats/oci/oci-store.js";
import { indexChangeTracker, type IndexChangeTracker } from "./index-changes.js";
import { SCHEMA, type ArtifactsDatabase } from "./schema.js";

export type Db = Kysely<ArtifactsDatabase>;

/** A repository named as a group's member, as it is when the group is written. */
export interface MemberRow {
  name: string;
  format: string;
  type: string;
  /** Its removal began (closeRepository). */
  removing: boolean;
}
/** Refuses (throws) members as they are; given only those that exist. */
export type MembersCheck = (found: MemberRow[]) => void;
/** The rows one statement answered, as pg parsed them. */
export type Rows = Record<string, unknown>[];

const { escapeIdentifier, escapeLiteral } = pg;

/** The SQLSTATE (class "SV", ours) of a write refused because its repository is gone or being removed. */
const CLOSED = "SV404";

/** How lockedTransaction runs a change. */
export interface LockedOptions<T> {
  /** Sent with COMMIT (the artifact row, the outbox row); built from `fn`'s result. */
  lastStatement?: (result: T) => string | undefined;
  /** Advisory lock keys (lockKey()) taken after the path's: a package's. */
  moreLocks?: string[];
  /** Advisory lock keys taken shared after those: a blob's (lockKey("blob", sha256)), which a reclaim takes exclusively. */
  sharedLocks?: string[];
  /**
   * Statements sent with BEGIN, after the locks (look-ups a change needs, a format's rows); their
   * rows are `fn`'s second argument, in order. Values quoted in (pg's escaping): no parameters.
   */
  withBegin?: string[];
  /**
   * For a write that adds to the repository: it holds the repository open, and when the
   * repository is gone or being removed nothing runs and this answers (or throws).
   */
  whenClosed?: () => T;
}

/**
 * An advisory lock key: 64 bits of a SHA-256 of what is locked (its kind first, so a path and a
 * package never share a key), as a signed bigint literal that needs no statement parameter.
 */
export function lockKey(kind: string, ...parts: string[]): string {
  return createHash("sha256").update([kind, ...parts].join("\0")).digest().readBigInt64BE(0).toString();
}

/** The folders of a path that could be artifacts themselves: "a" and "a/b" for "a/b/c". */
export function parentsOf(path: string): string[] {
  const segments = path.split("/");
  return segments.slice(1).map((_, i) => segments.slice(0, i + 1).join("/"));
}

export interface ArtifactRecord {
  repository: string;
  path: string;
  size: number;
  sha256: string;
  contentType: string | null;
  updated: Date;
  lastDownloaded: Date | null;
  downloads: number;
  heldReason: string | null;
}

export interface DownloadCount {
  repository: string;
  path: string;
  /** Who downloaded (kind:id, `anonymous:` for anyone); the artifact's own counts sum every principal's. */
  principal: string;
  /** First download of this batch. */
  first: Date;
  /** Latest download. */
  at: Date;
  count: number;
}

/** Who downloaded a file: each principal's first and latest download and how many (a finding's blast radius). */
export interface Downloader {
  principal: string;
  first: Date;
  last: Date;
  downloads: number;
}

export interface RepositoryDetail {
  name: string;
  format: string;
  created: Date;
  /** `hosted`, `proxy` or `group`. */
  type: string;
  /** A proxy's upstream URL (its credentials are never read out here); null for a hosted repository. */
  upstreamUrl: string | null;
  /** A group's members in the order they are asked; null for a hosted or proxy repository. */
  members: string[] | null;
  /** The groups that name this repository as a member, in name order. */
  groups: string[];
  /** Artifacts the index holds, and their bytes (each path counted, even where content is shared). */
  artifacts: number;
  bytes: number;
  /** Its storage quota in bytes (domain/quota.ts); null: none. */
  quotaBytes: number | null;
  /** The bytes its quota counts (repository_usage, kept by triggers: `bytes` as of the last commit). */
  usedBytes: number;
  /** Without Service-Repository-Name, a request is authorised against this repository instead of `*`. */
  scopeFromPath: boolean;
}

/** A repository's storage quota and what it uses (repository_usage). */
export interface RepositoryUsage {
  repository: string;
  type: string;
  usedBytes: number;
  quotaBytes: number | null;
}

type Row = {
  repository: string;
  path: string;
  size: string;
  sha256: string;
  content_type: string | null;
  updated_at: Date;
  last_downloaded_at: Date | null;
  downloads: string;
  held_reason: string | null;
};

const toRecord = (r: Row): ArtifactRecord => ({
  repository: r.repository,
  path: r.path,
  size: Number(r.size),
  sha256: r.sha256,
  contentType: r.content_type,
  updated: r.updated_at,
  lastDownloaded: r.last_downloaded_at,
  downloads: Number(r.downloads),
  heldReason: r.held_reason,
});

const COLUMNS = ["repository", "path", "size", "sha256", "content_type", "updated_at", "last_downloaded_at", "downloads", "held_reason"] as const;
const FIND_FOR_READ = `select ${COLUMNS.join(", ")} from ${escapeIdentifier(SCHEMA)}.artifacts where repository = $1 and path = $2`;

/**
 * Repository configuration and per-artifact metadata (size, digest, downloads, holds) in
 * Postgres. Methods take an optional transaction so a change and its outbox row commit together.
 * Every change to what a path holds is told to `changes`' listeners as it is made and again
 * once it has committed (store/index-changes.ts): the read cache's eviction.
 */
export function metadataStoreFactory(root: Db, pool: pg.Pool, changes: IndexChangeTracker = indexChangeTracker()) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  const detailOf = async (name: string, tx?: Db): Promise<RepositoryDetail | undefined> => {
    const row = await db(tx)
      .selectFrom("repositories as r")
      .leftJoin("artifacts as a", "a.repository", "r.name")
      .leftJoin("repository_usage as u", "u.repository", "r.name")
      .select((eb) => ["r.name", "r.format", "r.created_at", "r.type", "r.upstream_url", "r.quota_bytes", "r.scope_from_path", "u.used_bytes", eb.fn.count<string>("a.path").as("artifacts"), eb.fn.coalesce(eb.fn.sum<string>("a.size"), sql<string>`0`).as("bytes")])
      .where("r.name", "=", name)
      .groupBy(["r.name", "r.format", "r.created_at", "r.type", "r.upstream_url", "r.quota_bytes", "r.scope_from_path", "u.used_bytes"])
      .executeTakeFirst();
    if (!row) return undefined;
    const [members, groups] = await Promise.all([
      row.type === "group" ? membersOf(name, tx) : null,
      db(tx).selectFrom("group_members").select("group_name").where("member", "=", name).orderBy("group_name").execute(),
    ]);
    return {
      name: row.name,
      format: row.format,
      created: row.created_at,
      type: row.type,
      upstreamUrl: row.upstream_url,
      members,
      groups: groups.map((g) => g.group_name),
      artifacts: Number(row.artifacts),
      bytes: Number(row.bytes),
      quotaBytes: row.quota_bytes === null ? null : Number(row.quota_bytes),
      usedBytes: Number(row.used_bytes ?? 0),
      scopeFromPath: row.scope_from_path,
    };
  };
  const membersOf = async (group: string, tx?: Db): Promise<string[]> =>
    (await db(tx).selectFrom("group_members").select("member").where("group_name", "=", group).orderBy("position").execute()).map((r) => r.member);
  /**
   * Writes a group's members (position order) in `tx`, after taking each member's repository lock
   * shared (a removal takes it exclusively: closeRepository) and letting `check` refuse them as
   * they are now (those that exist: name, format, type, whether a removal began). A member's
   * removal therefore either sees the group naming it or is seen by the check.
   */
  const writeMembers = async (tx: Db, group: string, members: readonly string[], check: MembersCheck): Promise<void> => {
    for (const m of [...new Set(members)].sort()) await sql.raw(`select pg_advisory_xact_lock_shared(${lockKey("repository", m)})`).execute(tx);
    const found = members.length === 0 ? [] : await db(tx).selectFrom("repositories").select(["name", "format", "type", "removing_since"]).where("name", "in", [...members]).execute();
    check(found.map((r) => ({ name: r.name, format: r.format, type: r.type, removing: r.removing_since !== null })));
    await db(tx).deleteFrom("group_members").where("group_name", "=", group).execute();
    if (members.length > 0) await db(tx).insertInto("group_members").values(members.map((member, position) => ({ group_name: group, position, member }))).execute();
  };
  const lockedTransaction = async <T>(repository: string, path: string, fn: (tx: Db, first: Rows[]) => Promise<T>, opts: LockedOptions<T> = {}): Promise<T> => {
    // A write that adds to the repository holds it open (shared), so its removal
    // (closeRepository) waits for it and every later write sees it closed. The check runs
    // after the shared lock, in a statement of its own, so its snapshot sees a removal that
    // closed the repository meanwhile (a primary key look-up); it fails with CLOSED when the
    // repository is gone or closing. The whole prelude is one message: the locks' keys are
    // numbers and the name is quoted by pg.
    // A name no repository can have (so none that could end the quoting) is no open repository.
    if (opts.whenClosed && !isRepositoryName(repository)) return opts.whenClosed();
    const open = `do $$ begin if not exists (select 1 from ${escapeIdentifier(SCHEMA)}.repositories where name = ${escapeLiteral(repository)} and removing_since is null and type <> 'group') then raise exception 'repository closed' using errcode = '${CLOSED}'; end if; end $$`;
    const first = opts.withBegin ?? [];
    const prelude = [
      "begin",
      ...(opts.whenClosed ? [`select pg_advisory_xact_lock_shared(${lockKey("repository", repository)})`] : []),
      `select pg_advisory_xact_lock(${lockKey("artifact-path", repository, path)})`,
      ...(opts.whenClosed ? [open] : []),
      ...(opts.moreLocks ?? []).map((k) => `select pg_advisory_xact_lock(${k})`),
      ...(opts.sharedLocks ?? []).map((k) => `select pg_advisory_xact_lock_shared(${k})`),
      ...first,
    ];
    // The raw client: a message of several statements answers each one's rows, which kysely drops.
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      let results: pg.QueryResult[];
      try {
        const r = (await client.query(prelude.join("; "))) as pg.QueryResult | pg.QueryResult[];
        results = Array.isArray(r) ? r : [r];
      } catch (err) {
        if ((err as { code?: string }).code !== CLOSED || !opts.whenClosed) throw err;
        await client.query("rollback");
        return opts.whenClosed();
      }
      const result = await fn(kyselyOn(root, client), results.slice(results.length - first.length).map((r) => r.rows));
      // The last statements (the artifact row, the outbox row) travel with COMMIT; if one fails, Postgres skips the COMMIT.
      const last = opts.lastStatement?.(result);
      await client.query(last ? `${last}; commit` : "commit");
      return result;
    } catch (err) {
      await client.query("rollback").catch((e: Error) => (broken = e));
      throw err;
    } finally {
      // A connection that cannot even roll back is dropped, not handed to the next caller.
      client.release(broken);
    }
  };
  const transaction = <T>(fn: (tx: Db) => Promise<T>): Promise<T> => changes.transaction(() => root.transaction().execute(fn));
  return {
    /** Where changes to the path index are told (the read cache listens). */
    changes,

    transaction,

    /**
     * Runs `fn` in a transaction that first takes the path's lock, which serialises every change
     * to one path across replicas until it ends: the file rename or unlink, its metadata and its
     * event happen in one order everywhere. BEGIN and the locks go to Postgres as one message
     * (the keys are numbers computed here, so the statements need no parameters), and
     * `lastStatement` goes with COMMIT: round trips saved, each of which costs both processes a
     * wake-up (docs/internals/performance.md, "Publishing").
     */
    lockedTransaction<T>(repository: string, path: string, fn: (tx: Db, first: Rows[]) => Promise<T>, opts: LockedOptions<T> = {}): Promise<T> {
      return changes.transaction(() => lockedTransaction(repository, path, fn, opts));
    },

    /**
     * Takes a blob's lock in `tx` until it ends: shared by a change committing a row that
     * references it, exclusive by a reclaim or repair removing it (which then sees every such
     * row committed, and no new one until it is done).
     */
    async lockBlob(tx: Db, sha256: string, mode: "shared" | "exclusive"): Promise<void> {
      await sql.raw(`select pg_advisory_xact_lock${mode === "shared" ? "_shared" : ""}(${lockKey("blob", sha256)})`).execute(tx);
    },

    /** Holds a repository open for a write that adds to it (as lockedTransaction's whenClosed, without a path); false: write nothing. */
    async holdRepositoryOpen(tx: Db, name: string): Promise<boolean> {
      await sql.raw(`select pg_advisory_xact_lock_shared(${lockKey("repository", name)})`).execute(tx);
      // A group holds no files of its own: what is written through it goes to a member (routes/group-dispatch.ts).
      return (await db(tx).selectFrom("repositories").select("name").where("name", "=", name).where("removing_since", "is", null).where("type", "<>", "group").executeTakeFirst()) !== undefined;
    },

    /**
     * Begins a repository's removal: waits for the writes holding it open to commit, lets
     * `mayClose` refuse (it sees the repository as they left it; what it throws closes
     * nothing), then marks it so that no write adds to it any more. Undefined when there is
     * no such repository.
     */
    async closeRepository(name: string, mayClose: (r: RepositoryDetail) => void): Promise<RepositoryDetail | undefined> {
      return transaction(async (tx) => {
        await sql.raw(`select pg_advisory_xact_lock(${lockKey("repository", name)})`).execute(tx);
        const r = await detailOf(name, tx);
        if (!r) return undefined;
        mayClose(r);
        changes.changing(name);
        await db(tx).updateTable("repositories").set({ removing_since: sql`coalesce(removing_since, now())` }).where("name", "=", name).execute();
        return r;
      });
    },

    async ensureRepository(name: string, format: string) {
      await db().insertInto("repositories").values({ name, format }).onConflict((oc) => oc.column("name").doNothing()).execute();
    },
    async repositories(): Promise<{ name: string; format: string; retention: unknown; created: Date; type: string; upstreamUrl: string | null; members: string[] | null; quotaBytes: number | null; usedBytes: number; scopeFromPath: boolean }[]> {
      const [found, members] = await Promise.all([
        db()
          .selectFrom("repositories as r")
          .leftJoin("repository_usage as u", "u.repository", "r.name")
          .select(["r.name", "r.format", "r.retention", "r.created_at as created", "r.type", "r.upstream_url as upstreamUrl", "r.quota_bytes", "r.scope_from_path as scopeFromPath", "u.used_bytes"])
          .orderBy("r.name")
          .execute(),
        db().selectFrom("group_members").select(["group_name", "member"]).orderBy("group_name").orderBy("position").execute(),
      ]);
      const byGroup = new Map<string, string[]>();
      for (const m of members) byGroup.set(m.group_name, [...(byGroup.get(m.group_name) ?? []), m.member]);
      const rows = found.map(({ quota_bytes, used_bytes, ...r }) => ({ ...r, quotaBytes: quota_bytes === null ? null : Number(quota_bytes), usedBytes: Number(used_bytes ?? 0) }));
      return rows.map((r) => ({ ...r, members: r.type === "group" ? (byGroup.get(r.name) ?? []) : null }));
    },
    /** The proxy repositories' upstreams, their credentials sealed (read by the repository list, never answered). */
    async upstreams(): Promise<{ name: string; url: string; sealed: string | null }[]> {
      const rows = await db().selectFrom("repositories").select(["name", "upstream_url", "upstream_credentials"]).where("type", "=", "proxy").execute();
      return rows.flatMap((r) => (r.upstream_url ? [{ name: r.name, url: r.upstream_url, sealed: r.upstream_credentials }] : []));
    },
    /** false when a repository of that name exists already. A proxy is given its upstream (its credentials sealed). */
    async createRepository(name: string, format: string, proxy?: { url: string; sealed: string | null }, quotaBytes?: number, scopeFromPath?: boolean): Promise<boolean> {
      const quota = { ...(quotaBytes === undefined ? {} : { quota_bytes: String(quotaBytes) }), ...(scopeFromPath ? { scope_from_path: true } : {}) };
      const values = proxy ? { name, format, type: "proxy", upstream_url: proxy.url, upstream_credentials: proxy.sealed, ...quota } : { name, format, ...quota };
      const r = await db().insertInto("repositories").values(values).onConflict((oc) => oc.column("name").doNothing()).executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },
    /**
     * Creates a group repository with its members (in order); `check` refuses them as they are
     * (writeMembers). False when a repository of that name exists already.
     */
    async createGroup(name: string, format: string, members: readonly string[], check: MembersCheck, scopeFromPath = false): Promise<boolean> {
      return transaction(async (tx) => {
        const r = await db(tx).insertInto("repositories").values({ name, format, type: "group", scope_from_path: scopeFromPath }).onConflict((oc) => oc.column("name").doNothing()).executeTakeFirst();
        if (Number(r.numInsertedOrUpdatedRows ?? 0) === 0) return false;
        await writeMembers(tx, name, members, check);
        return true;
      });
    },
    /**
     * Replaces a group's members (in order). Undefined when there is no such repository (or its
     * removal began); else its type before the change: nothing is written unless it is `group`.
     */
    async setMembers(name: string, members: readonly string[], check: MembersCheck): Promise<string | undefined> {
      return transaction(async (tx) => {
        await sql.raw(`select pg_advisory_xact_lock_shared(${lockKey("repository", name)})`).execute(tx);
        const group = await db(tx).selectFrom("repositories").select(["type"]).where("name", "=", name).where("removing_since", "is", null).executeTakeFirst();
        if (group?.type === "group") await writeMembers(tx, name, members, check);
        return group?.type;
      });
    },
    /** A repository with what it holds (artifacts and their bytes), or undefined. */
    repository: (name: string) => detailOf(name),
    /** Drops a repository's row (its metadata goes with it); false when there was none. */
    async dropRepository(name: string): Promise<boolean> {
      const r = await changes.change(name, undefined, () =>
        transaction(async (tx) => {
          // Out of every group that names it (a removal the groups did not refuse: forced, or there were none).
          await db(tx).deleteFrom("group_members").where("member", "=", name).execute();
          return db(tx).deleteFrom("repositories").where("name", "=", name).executeTakeFirst();
        }),
      );
      return Number(r.numDeletedRows) > 0;
    },
    /** undefined: no such repository; null: no policy. */
    async retention(name: string): Promise<unknown | null | undefined> {
      const row = await db().selectFrom("repositories").select("retention").where("name", "=", name).executeTakeFirst();
      return row ? row.retention : undefined;
    },
    /** false when there is no such repository. */
    async setRetention(name: string, policy: object | null): Promise<boolean> {
      const r = await db()
        .updateTable("repositories")
        .set({ retention: policy === null ? null : JSON.stringify(policy) })
        .where("name", "=", name)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    /**
     * A repository's quota and usage, or undefined; `name` undefined: every repository's (the
     * meters), in name order.
     */
    async usage(name?: string): Promise<RepositoryUsage[]> {
      let q = db()
        .selectFrom("repositories as r")
        .leftJoin("repository_usage as u", "u.repository", "r.name")
        .select(["r.name", "r.type", "r.quota_bytes", "u.used_bytes"])
        .where("r.removing_since", "is", null);
      if (name !== undefined) q = q.where("r.name", "=", name);
      const rows = await q.orderBy("r.name").execute();
      return rows.map((r) => ({ repository: r.name, type: r.type, usedBytes: Number(r.used_bytes ?? 0), quotaBytes: r.quota_bytes === null ? null : Number(r.quota_bytes) }));
    },
    /**
     * A proxy's cached files that have gone longest without a download (or since they were
     * fetched, when never downloaded), oldest first, held files and `keep` left out: what its
     * quota evicts first (domain/quota.ts).
     */
    async leastRecentlyUsed(repository: string, keep: string, limit: number): Promise<ArtifactRecord[]> {
      const rows = await db()
        .selectFrom("artifacts")
        .select(COLUMNS)
        .where("repository", "=", repository)
        .where("path", "<>", keep)
        .where("held_reason", "is", null)
        .orderBy(sql`coalesce(last_downloaded_at, updated_at)`)
        .orderBy(sql`path collate "C"`)
        .limit(limit)
        .execute();
      return rows.map(toRecord);
    },
    /** Sets (a positive number of bytes) or removes (null) a repository's quota; false when there is no such repository. */
    async setQuota(name: string, quotaBytes: number | null): Promise<boolean> {
      const r = await db().updateTable("repositories").set({ quota_bytes: quotaBytes === null ? null : String(quotaBytes) }).where("name", "=", name).where("removing_since", "is", null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    /** Switches a repository's scopeFromPath; false when there is no such repository. */
    async setScopeFromPath(name: string, on: boolean): Promise<boolean> {
      const r = await db().updateTable("repositories").set({ scope_from_path: on }).where("name", "=", name).where("removing_since", "is", null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },
    /** The repositories whose scopeFromPath is on (what every gateway asks for: GET /internal/scope-from-path). */
    async scopeFromPathNames(): Promise<string[]> {
      return (await db().selectFrom("repositories").select("name").where("scope_from_path", "=", true).where("removing_since", "is", null).orderBy("name").execute()).map((r) => r.name);
    },

    /** find() as one statement with its values quoted in, for lockedTransaction's withBegin; its row goes to recordOf. */
    findStatement(repository: string, path: string): string {
      return `select ${COLUMNS.join(", ")} from ${escapeIdentifier(SCHEMA)}.artifacts where repository = ${escapeLiteral(repository)} and path = ${escapeLiteral(path)}`;
    },
    /**
     * Whether a path clashes with the paths the index holds, as one statement for withBegin:
     * `parent` when a folder of it is an artifact ("a/b" for "a/b/c"), `folder` when it is the
     * folder of others ("a/b/..." for "a/b"). Its row goes to clashOf.
     */
    clashStatement(repository: string, path: string): string {
      const table = `${escapeIdentifier(SCHEMA)}.artifacts`;
      const r = escapeLiteral(repository);
      const parents = parentsOf(path);
      const parent = parents.length ? `exists (select 1 from ${table} where repository = ${r} and path in (${parents.map(escapeLiteral).join(", ")}))` : "false";
      // The paths under "<path>/": from "<path>/" up to "<path>0" ("0" follows "/"), on the byte-ordered index.
      const folder = `exists (select 1 from ${table} where repository = ${r} and (path collate "C") >= (${escapeLiteral(`${path}/`)} collate "C") and (path collate "C") < (${escapeLiteral(`${path}0`)} collate "C"))`;
      return `select ${parent} as parent, ${folder} as folder`;
    },
    clashOf: (rows: Rows): { parent: boolean; folder: boolean } => ({ parent: rows[0]?.parent === true, folder: rows[0]?.folder === true }),

    /** The record of a row findStatement answered. */
    recordOf: (rows: Rows): ArtifactRecord | undefined => (rows[0] ? toRecord(rows[0] as Row) : undefined),

    /**
     * find() for a download, the hottest query of the service: a statement prepared once per
     * connection (named), sent straight through the pool without the query builder. Postgres
     * then skips parsing and planning it, and this process building it (docs/internals/performance.md).
     */
    async findForRead(repository: string, path: string): Promise<ArtifactRecord | undefined> {
      const r = await pool.query<Row>({ name: "artifacts-find-for-read", text: FIND_FOR_READ, values: [repository, path] });
      return r.rows[0] ? toRecord(r.rows[0]) : undefined;
    },

    async find(repository: string, path: string, tx?: Db): Promise<ArtifactRecord | undefined> {
      const row = await db(tx).selectFrom("artifacts").select(COLUMNS).where("repository", "=", repository).where("path", "=", path).executeTakeFirst();
      return row ? toRecord(row) : undefined;
    },

    /**
     * recordArtifact as one statement with its values quoted in (pg's escaping), to send with the
     * transaction's COMMIT (lockedTransaction's lastStatement): a publish's last write costs no
     * round trip of its own.
     */
    recordStatement(a: { repository: string; path: string; size: number; sha256: string; contentType: string | null; at: Date; heldReason?: string | null }): string {
      if (!Number.isSafeInteger(a.size) || a.size < 0) throw new Error(`not a size: ${a.size}`);
      // Sent with a COMMIT (lockedTransaction's lastStatement): told again when that transaction ends.
      changes.changing(a.repository, a.path, { repository: a.repository, path: a.path, size: a.size, sha256: a.sha256, updated: a.at, ...(a.heldReason !== undefined ? { heldReason: a.heldReason } : {}) });
      const ct = a.contentType === null ? "null" : escapeLiteral(a.contentType);
      const values = `${escapeLiteral(a.repository)}, ${escapeLiteral(a.path)}, ${a.size}, ${escapeLiteral(a.sha256)}, ${ct}, ${escapeLiteral(a.at.toISOString())}::timestamptz`;
      const update = "on conflict (repository, path) do update set size = excluded.size, sha256 = excluded.sha256, content_type = excluded.content_type, updated_at = excluded.updated_at";
      if (a.heldReason === undefined) return `insert into ${escapeIdentifier(SCHEMA)}.artifacts (repository, path, size, sha256, content_type, updated_at) values (${values}) ${update}`;
      // The hold the row has once this commits (a publish read the row under its path's lock):
      // a hold the screening gate puts on the upload lands with the row, never shown unheld.
      const held = a.heldReason === null ? "null" : escapeLiteral(a.heldReason);
      return (
        `insert into ${escapeIdentifier(SCHEMA)}.artifacts (repository, path, size, sha256, content_type, updated_at, held_reason, held_at) values (${values}, ${held}, ${a.heldReason === null ? "null" : "now()"}) ` +
        `${update}, held_reason = excluded.held_reason, held_at = case when excluded.held_reason is null then null when artifacts.held_reason = excluded.held_reason then artifacts.held_at else now() end`
      );
    },

    /** Corrects size and digest, keeping the publish time, downloads and hold. */
    async correctArtifact(a: { repository: string; path: string; size: number; sha256: string }, tx?: Db) {
      await changes.change(a.repository, a.path, () => db(tx).updateTable("artifacts").set({ size: a.size, sha256: a.sha256 }).where("repository", "=", a.repository).where("path", "=", a.path).execute());
    },

    async forgetArtifact(repository: string, path: string, tx?: Db): Promise<ArtifactRecord | undefined> {
      const row = await changes.change(repository, path, () => db(tx).deleteFrom("artifacts").where("repository", "=", repository).where("path", "=", path).returning(COLUMNS).executeTakeFirst());
      return row ? toRecord(row) : undefined;
    },

    /** Whether any path, any build cache entry, or a chunk of an OCI upload under way holds this content (the artifacts_by_sha256 and build_cache_entries_by_sha256 indexes). */
    async referenced(sha256: string, tx?: Db): Promise<boolean> {
      if ((await db(tx).selectFrom("artifacts").select("path").where("sha256", "=", sha256).limit(1).executeTakeFirst()) !== undefined) return true;
      // A build cache's entry holds its blob as a path does (build-cache/build-cache-store.ts).
      const entry = await sql<{ one: number }>`select 1 as one from ${sql.id(SCHEMA, "build_cache_entries")} where sha256 = ${sha256} limit 1`.execute(db(tx));
      if (entry.rows.length > 0) return true;
      // So does a chunk of an OCI upload under way (its bytes wait there for the closing PUT).
      return liveChunk(db(tx), sha256);
    },

    /** The paths holding this content, a page at a time in (repository, path) order after `after`. */
    async holding(sha256: string, after: { repository: string; path: string } | undefined, limit: number, tx?: Db): Promise<{ repository: string; path: string }[]> {
      let q = db(tx).selectFrom("artifacts").select(["repository", "path"]).where("sha256", "=", sha256);
      if (after) q = q.where(sql<boolean>`(repository, path collate "C") > (${after.repository}, ${after.path} collate "C")`);
      return q.orderBy("repository").orderBy(sql`path collate "C"`).limit(limit).execute();
    },

    async setHold(repository: string, path: string, reason: string | null, tx?: Db) {
      // Told like any change of the row: a download answered from the read cache must see the hold.
      await changes.change(repository, path, () =>
        db(tx)
          .updateTable("artifacts")
          .set({ held_reason: reason, held_at: reason === null ? null : new Date() })
          .where("repository", "=", repository)
          .where("path", "=", path)
          .execute(),
      );
    },

    /** One page of a repository's metadata in byte order of the path (the order walks read). */
    async page(repository: string, after: string | undefined, limit: number): Promise<ArtifactRecord[]> {
      return this.browse(repository, { after, limit });
    },

    /**
     * One page of a repository's files for browsing, in byte order of the path; `prefix`: only
     * paths that start with it (LIKE on the byte-ordered index, its wildcards escaped). In `tx`, it
     * sees that transaction's own changes (a removal's row already gone).
     */
    async browse(repository: string, opts: { prefix?: string; after?: string; limit: number }, tx?: Db): Promise<ArtifactRecord[]> {
      let q = db(tx).selectFrom("artifacts").select(COLUMNS).where("repository", "=", repository);
      if (opts.prefix) {
        const pattern = `${opts.prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
        q = q.where(sql<boolean>`(path collate "C") like ${pattern}`);
      }
      if (opts.after !== undefined) q = q.where(sql<boolean>`(path collate "C") > (${opts.after} collate "C")`);
      const rows = await q.orderBy(sql`path collate "C"`).limit(opts.limit).execute();
      return rows.map(toRecord);
    },

    async hasRepository(name: string): Promise<boolean> {
      return (await db().selectFrom("repositories").select("name").where("name", "=", name).executeTakeFirst()) !== undefined;
    },

    /** One UPDATE for a whole batch of download counts. */
    /**
     * One batch of downloads: each file's count and latest download, and who downloaded it (one
     * row per file and principal), in one statement: a path no longer indexed counts nowhere.
     */
    async recordDownloads(batch: DownloadCount[]): Promise<void> {
      if (batch.length === 0) return;
      await sql`
        with d as (
          select * from unnest(${batch.map((b) => b.repository)}::text[], ${batch.map((b) => b.path)}::text[], ${batch.map((b) => b.principal)}::text[],
                               ${batch.map((b) => b.first.toISOString())}::timestamptz[], ${batch.map((b) => b.at.toISOString())}::timestamptz[],
                               ${batch.map((b) => b.count)}::bigint[]) as d(repository, path, principal, first_at, at, n)
        ), counted as (
          update ${sql.id(SCHEMA, "artifacts")} as a
          set last_downloaded_at = greatest(coalesce(a.last_downloaded_at, t.at), t.at), downloads = a.downloads + t.n
          from (select repository, path, max(at) as at, sum(n) as n from d group by repository, path) as t
          where a.repository = t.repository and a.path = t.path
          returning a.repository, a.path
        )
        insert into ${sql.id(SCHEMA, "downloaders")} as w (repository, path, principal, first_at, last_at, downloads)
        select d.repository, d.path, d.principal, d.first_at, d.at, d.n from d join counted c on c.repository = d.repository and c.path = d.path
        on conflict (repository, path, principal) do update set first_at = least(w.first_at, excluded.first_at), last_at = greatest(w.last_at, excluded.last_at), downloads = w.downloads + excluded.downloads`.execute(root);
    },

    /** Who downloaded each of some files, the latest first, at most `limit` principals a file, with how many there are in all. */
    async downloadersOf(files: readonly { repository: string; path: string }[], limit: number): Promise<Map<string, { total: number; latest: Downloader[] }>> {
      const out = new Map<string, { total: number; latest: Downloader[] }>();
      if (files.length === 0) return out;
      const r = await sql<{ repository: string; path: string; principal: string; first_at: Date; last_at: Date; downloads: string; total: string }>`
        select w.*, count(*) over (partition by w.repository, w.path) as total from (
          select w.*, row_number() over (partition by w.repository, w.path order by w.last_at desc, w.principal) as k
          from ${sql.id(SCHEMA, "downloaders")} w
          join unnest(${files.map((f) => f.repository)}::text[], ${files.map((f) => f.path)}::text[]) as f(repository, path) on f.repository = w.repository and f.path = w.path
        ) w`.execute(root);
      for (const x of r.rows) {
        const key = `${x.repository}/${x.path}`;
        const entry = out.get(key) ?? { total: Number(x.total), latest: [] };
        out.set(key, entry);
        if (entry.latest.length < limit) entry.latest.push({ principal: x.principal, first: x.first_at, last: x.last_at, downloads: Number(x.downloads) });
      }
      for (const e of out.values()) e.latest.sort((a, b) => b.last.getTime() - a.last.getTime() || a.principal.localeCompare(b.principal));
      return out;
    },
  };
}
export type MetadataStore = ReturnType<typeof metadataStoreFactory>;
