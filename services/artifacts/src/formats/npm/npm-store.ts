import { sql } from "kysely";
import pg from "pg";
import { lockKey, type Db } from "../../store/metadata-store.js";
import { SCHEMA } from "../../store/schema.js";
import { indexChangeTracker, type IndexChangeTracker } from "../../store/index-changes.js";

const { escapeIdentifier, escapeLiteral } = pg;
const packageOf = (r: { dist_tags: Record<string, string>; rev: number; created_at: Date; modified_at: Date }): NpmPackageRow => ({ distTags: r.dist_tags, rev: r.rev, created: r.created_at, modified: r.modified_at });
const FIND_PACKAGE = `select dist_tags, rev, created_at, modified_at from ${escapeIdentifier(SCHEMA)}.npm_packages where repository = $1 and name = $2`;
/**
 * A document's version rows, oldest first, without a held tarball's version (the screening gate,
 * docs/administration/screening.md: clients pick the newest version they may download), and the
 * readme of version $3 only (the full document's; null for the abbreviated one).
 */
const DOCUMENT_VERSIONS = `select v.version, v.tarball, v.published_at, v.manifest - 'readme' as manifest, case when v.version = $3 then v.manifest ->> 'readme' end as readme
  from ${escapeIdentifier(SCHEMA)}.npm_versions v
  where v.repository = $1 and v.name = $2
    and not exists (select 1 from ${escapeIdentifier(SCHEMA)}.artifacts a where a.repository = v.repository and a.path = v.tarball and a.held_reason is not null)
  order by v.published_at`;

export interface NpmPackageRow {
  distTags: Record<string, string>;
  rev: number;
  created: Date;
  modified: Date;
}

export interface NpmVersionRow {
  version: string;
  manifest: Record<string, unknown>;
  /** The tarball's artifact path. */
  tarball: string;
  published: Date;
}

/**
 * npm packages and their versions in Postgres. Every change to a package runs in a transaction
 * that holds the package's lock first (lockPackage), so two publishes of one package, or a
 * publish and a dist-tag change, happen one after the other on every replica.
 */
export function npmStoreFactory(root: Db, pool: pg.Pool, changes: Pick<IndexChangeTracker, "transaction"> = indexChangeTracker()) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  const packageLock = (repository: string, name: string) => lockKey("npm-package", repository, name);
  const wasUnpublished = async (repository: string, name: string, version: string, tx?: Db): Promise<boolean> => {
    const r = await db(tx).selectFrom("npm_unpublished").select("version").where("repository", "=", repository).where("name", "=", name).where("version", "=", version).executeTakeFirst();
    return r !== undefined;
  };
  return {
    /** A transaction whose changes to the path index (a version's tarball removed) are told once it ends (store/index-changes.ts). */
    transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      return changes.transaction(() => root.transaction().execute(fn));
    },

    async lockPackage(tx: Db, repository: string, name: string): Promise<void> {
      await sql.raw(`select pg_advisory_xact_lock(${packageLock(repository, name)})`).execute(tx);
    },

    /** The package's lock key, for a transaction that takes it with others (metadata-store.ts lockedTransaction). */
    packageLock,

    async findPackage(repository: string, name: string, tx?: Db): Promise<NpmPackageRow | undefined> {
      if (!tx) {
        // Every document read asks for this row (npm-document-cache.ts): a statement prepared
        // once per connection, built once here, not per read.
        const r = await pool.query<{ dist_tags: Record<string, string>; rev: number; created_at: Date; modified_at: Date }>({ name: "npm-find-package", text: FIND_PACKAGE, values: [repository, name] });
        return r.rows[0] && packageOf(r.rows[0]);
      }
      const r = await db(tx)
        .selectFrom("npm_packages")
        .select(["dist_tags", "rev", "created_at", "modified_at"])
        .where("repository", "=", repository)
        .where("name", "=", name)
        .executeTakeFirst();
      return r && packageOf(r);
    },

    async versions(repository: string, name: string, tx?: Db): Promise<NpmVersionRow[]> {
      const rows = await db(tx)
        .selectFrom("npm_versions")
        .select(["version", "manifest", "tarball", "published_at"])
        .where("repository", "=", repository)
        .where("name", "=", name)
        .orderBy("published_at")
        .execute();
      return rows.map((r) => ({ version: r.version, manifest: r.manifest, tarball: r.tarball, published: r.published_at }));
    },

    /**
     * The rows a package's documents are built from: each version's manifest without its readme
     * (a package may have thousands of versions, each with a readme of up to 64 Ki characters),
     * and the readme of `readmeOf` (the latest version) alone.
     */
    async documentVersions(repository: string, name: string, readmeOf: string | undefined): Promise<{ versions: NpmVersionRow[]; readme: string | undefined }> {
      // Every document built (each change of a package, each kind) reads these: a statement
      // prepared once per connection, as findPackage's, not a query built and planned per build.
      const { rows } = await pool.query<{ version: string; tarball: string; published_at: Date; manifest: Record<string, unknown>; readme: string | null }>({
        name: "npm-document-versions",
        text: DOCUMENT_VERSIONS,
        values: [repository, name, readmeOf ?? null],
      });
      const readme = rows.find((r) => typeof r.readme === "string")?.readme ?? undefined;
      return { versions: rows.map((r) => ({ version: r.version, manifest: r.manifest, tarball: r.tarball, published: r.published_at })), readme };
    },

    /** One version's row, without reading the package's others (a package may have thousands). */
    async findVersion(repository: string, name: string, version: string, tx?: Db): Promise<NpmVersionRow | undefined> {
      const r = await db(tx)
        .selectFrom("npm_versions")
        .select(["version", "manifest", "tarball", "published_at"])
        .where("repository", "=", repository)
        .where("name", "=", name)
        .where("version", "=", version)
        .executeTakeFirst();
      return r ? { version: r.version, manifest: r.manifest, tarball: r.tarball, published: r.published_at } : undefined;
    },

    async ensurePackage(tx: Db, repository: string, name: string): Promise<void> {
      await db(tx).insertInto("npm_packages").values({ repository, name }).onConflict((oc) => oc.columns(["repository", "name"]).doNothing()).execute();
    },

    /** false when that version exists already. `published`: kept from another repository by an export (else now). */
    async insertVersion(tx: Db, v: { repository: string; name: string; version: string; manifest: object; tarball: string; published?: Date }): Promise<boolean> {
      const { published, ...rest } = v;
      const r = await db(tx)
        .insertInto("npm_versions")
        .values({ ...rest, manifest: JSON.stringify(v.manifest), ...(published ? { published_at: published } : {}) })
        .onConflict((oc) => oc.columns(["repository", "name", "version"]).doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },

    /**
     * A publish's rows, in the caller's transaction (which holds the package's lock): the
     * package (created, or its dist-tags merged with `tags` and a `latest` if it had none), then
     * the version, unless it exists or was unpublished (then it answers no row and the caller
     * rolls back). One statement with its values quoted in (pg's escaping), sent with the
     * publish's BEGIN and locks (metadata-store.ts lockedTransaction's withBegin).
     */
    addVersionStatement(v: { repository: string; name: string; version: string; manifest: object; tarball: string; tags: Record<string, string> }): string {
      const [repository, name, version] = [escapeLiteral(v.repository), escapeLiteral(v.name), escapeLiteral(v.version)];
      const latest = `jsonb_build_object('latest', ${version}::text)`;
      const tags = `${escapeLiteral(JSON.stringify(v.tags))}::jsonb`;
      const schema = escapeIdentifier(SCHEMA);
      // One statement: the package row first (the version's foreign key sees it at the end of
      // the statement), then the version, which the statement's "from pkg" orders after it.
      return (
        `with pkg as (insert into ${schema}.npm_packages as p (repository, name, dist_tags) values (${repository}, ${name}, ${latest} || ${tags}) ` +
        `on conflict (repository, name) do update set dist_tags = ${latest} || p.dist_tags || ${tags}, rev = p.rev + 1, modified_at = now() returning 1) ` +
        `insert into ${schema}.npm_versions (repository, name, version, manifest, tarball) ` +
        `select ${repository}, ${name}, ${version}, ${escapeLiteral(JSON.stringify(v.manifest))}::jsonb, ${escapeLiteral(v.tarball)} from pkg ` +
        `where not exists (select 1 from ${schema}.npm_unpublished where repository = ${repository} and name = ${name} and version = ${version}) ` +
        "on conflict (repository, name, version) do nothing returning version"
      );
    },

    /** A repository's package names in byte order, one page after `after`. */
    async packageNames(repository: string, after: string | undefined, limit: number): Promise<string[]> {
      let q = db().selectFrom("npm_packages").select("name").where("repository", "=", repository);
      if (after !== undefined) q = q.where(sql<boolean>`(name collate "C") > (${after} collate "C")`);
      const rows = await q.orderBy(sql`name collate "C"`).limit(limit).execute();
      return rows.map((r) => r.name);
    },

    /** Whether that version was unpublished (it can never be published again). */
    wasUnpublished,

    async markUnpublished(tx: Db, repository: string, name: string, versions: string[]): Promise<void> {
      if (versions.length === 0) return;
      await db(tx)
        .insertInto("npm_unpublished")
        .values(versions.map((version) => ({ repository, name, version })))
        .onConflict((oc) => oc.columns(["repository", "name", "version"]).doNothing())
        .execute();
    },

    async setManifest(tx: Db, repository: string, name: string, version: string, manifest: object): Promise<void> {
      await db(tx).updateTable("npm_versions").set({ manifest: JSON.stringify(manifest) }).where("repository", "=", repository).where("name", "=", name).where("version", "=", version).execute();
    },

    async deleteVersion(tx: Db, repository: string, name: string, version: string): Promise<void> {
      await db(tx).deleteFrom("npm_versions").where("repository", "=", repository).where("name", "=", name).where("version", "=", version).execute();
    },

    async deletePackage(tx: Db, repository: string, name: string): Promise<void> {
      await db(tx).deleteFrom("npm_packages").where("repository", "=", repository).where("name", "=", name).execute();
    },

    /** Records a change: new dist-tags (when given), the next revision and the modification time. */
    async touch(tx: Db, repository: string, name: string, distTags?: Record<string, string>): Promise<void> {
      await db(tx)
        .updateTable("npm_packages")
        .set({ ...(distTags ? { dist_tags: JSON.stringify(distTags) } : {}), rev: sql`rev + 1`, modified_at: new Date() })
        .where("repository", "=", repository)
        .where("name", "=", name)
        .execute();
    },
  };
}
export type NpmStore = ReturnType<typeof npmStoreFactory>;
