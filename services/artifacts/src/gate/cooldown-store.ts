import { randomUUID } from "node:crypto";
import type { Kysely, Migration } from "kysely";
import type pg from "pg";
import { escapeIdentifier } from "pg";
import { SCHEMA } from "../store/schema.js";

const T = (table: string) => `${escapeIdentifier(SCHEMA)}.${escapeIdentifier(table)}`;

/**
 * The cooldown's tables (docs/administration/screening.md, "Cooldown"): a repository's own
 * minimum age, and the break-glass allows that let a package's young versions through.
 */
export const cooldownMigrations: Record<string, Migration> = {
  "0017_gate_cooldown": {
    async up(db: Kysely<unknown>) {
      const s = db.schema.withSchema(SCHEMA);
      // A repository without a row inherits svc.gate.min-age; min_age "" switches the cooldown off for it.
      await s
        .createTable("gate_repository_min_age")
        .addColumn("repository", "text", (c) => c.primaryKey().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("min_age", "text", (c) => c.notNull())
        .execute();
      // repository null: every repository; version null: every version of the package.
      await s
        .createTable("gate_allows")
        .addColumn("id", "uuid", (c) => c.primaryKey())
        .addColumn("repository", "text", (c) => c.references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("ecosystem", "text", (c) => c.notNull())
        .addColumn("name", "text", (c) => c.notNull())
        .addColumn("version", "text")
        .addColumn("reason", "text", (c) => c.notNull())
        .addColumn("created_by", "text", (c) => c.notNull())
        .addColumn("created_at", "timestamptz", (c) => c.notNull())
        .execute();
      await s.createIndex("gate_allows_by_package").on("gate_allows").columns(["ecosystem", "name"]).execute();
    },
  },
};

/** A break-glass allow: young versions of a package (or one version) let through the cooldown. */
export interface Allow {
  id: string;
  /** null: in every repository. */
  repository: string | null;
  ecosystem: string;
  name: string;
  /** null: every version. */
  version: string | null;
  reason: string;
  createdBy: string;
  created: Date;
}

const allowOf = (x: Record<string, unknown>): Allow => ({
  id: x.id as string,
  repository: (x.repository as string | null) ?? null,
  ecosystem: x.ecosystem as string,
  name: x.name as string,
  version: (x.version as string | null) ?? null,
  reason: x.reason as string,
  createdBy: x.created_by as string,
  created: x.created_at as Date,
});

export function cooldownStoreFactory(pool: pg.Pool) {
  return {
    /** A repository's own minimum age ("" = off); null when it inherits svc.gate.min-age. */
    async repositoryMinAge(repository: string): Promise<string | null> {
      const r = await pool.query<{ min_age: string }>(`select min_age from ${T("gate_repository_min_age")} where repository = $1`, [repository]);
      return r.rows[0]?.min_age ?? null;
    },

    /** Sets (or, null, removes) a repository's own minimum age; false when there is no such repository. */
    async setRepositoryMinAge(repository: string, minAge: string | null): Promise<boolean> {
      const exists = await pool.query(`select 1 from ${T("repositories")} where name = $1`, [repository]);
      if (exists.rowCount === 0) return false;
      if (minAge === null) await pool.query(`delete from ${T("gate_repository_min_age")} where repository = $1`, [repository]);
      else
        await pool.query(`insert into ${T("gate_repository_min_age")} (repository, min_age) values ($1, $2) on conflict (repository) do update set min_age = excluded.min_age`, [
          repository,
          minAge,
        ]);
      return true;
    },

    /** The allows of a package that apply in `repository` (its own and those of every repository). */
    async allowsOf(repository: string, ecosystem: string, name: string): Promise<Allow[]> {
      const r = await pool.query(`select * from ${T("gate_allows")} where ecosystem = $1 and name = $2 and (repository is null or repository = $3)`, [ecosystem, name, repository]);
      return r.rows.map(allowOf);
    },

    async allows(after: string | undefined, limit: number): Promise<Allow[]> {
      const r = await pool.query(`select * from ${T("gate_allows")} where ($1::uuid is null or id > $1::uuid) order by id limit $2`, [after ?? null, limit]);
      return r.rows.map(allowOf);
    },

    async addAllow(a: Omit<Allow, "id" | "created">): Promise<Allow> {
      const r = await pool.query(`insert into ${T("gate_allows")} (id, repository, ecosystem, name, version, reason, created_by, created_at) values ($1, $2, $3, $4, $5, $6, $7, now()) returning *`, [
        randomUUID(),
        a.repository,
        a.ecosystem,
        a.name,
        a.version,
        a.reason,
        a.createdBy,
      ]);
      return allowOf(r.rows[0]);
    },

    async removeAllow(id: string): Promise<boolean> {
      const r = await pool.query(`delete from ${T("gate_allows")} where id = $1`, [id]);
      return (r.rowCount ?? 0) > 0;
    },

    async hasRepository(name: string): Promise<boolean> {
      const r = await pool.query(`select 1 from ${T("repositories")} where name = $1`, [name]);
      return (r.rowCount ?? 0) > 0;
    },
  };
}
export type CooldownStore = ReturnType<typeof cooldownStoreFactory>;
