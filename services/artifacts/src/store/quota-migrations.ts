import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "./schema.js";

/** The SQLSTATE (class "SV", ours) of a write refused because it would take its repository over its storage quota. */
export const OVER_QUOTA = "SV413";

/**
 * Storage quotas (domain/quota.ts; docs/administration/repositories.md, "Quotas"): a repository's
 * `quota_bytes`, and its usage kept by triggers on the path index, so every write to it counts
 * whichever code makes it (a publish, a DELETE, retention, a walk's repairs, a forced removal,
 * a format added later) and a restart finds it as it was.
 *
 * The triggers are per statement (their transition tables), so a statement that touches many
 * rows (a download batch, a repository's cascade) updates each repository's usage once. The
 * usage row's lock, taken by the update, serialises the writes that change one repository's
 * usage until they commit: a write that grows a hosted repository past its quota (checked
 * after its own update, so it sees every committed one) fails with OVER_QUOTA and rolls back.
 * A transaction that sets `svc.quota` to `off` (a walk indexing files already stored) is
 * counted, never refused; so are proxy repositories' fetches (docs: proxies evict instead).
 */
export const quotaMigrations: Record<string, Migration> = {
  "0024_repository_quotas": {
    async up(db: Kysely<unknown>) {
      const s = sql.id(SCHEMA);
      await sql`alter table ${s}.repositories add column quota_bytes bigint check (quota_bytes > 0)`.execute(db);
      await sql`create table ${s}.repository_usage (
        repository text primary key references ${s}.repositories(name) on delete cascade,
        used_bytes bigint not null default 0
      )`.execute(db);
      await sql`insert into ${s}.repository_usage (repository, used_bytes)
        select r.name, coalesce((select sum(a.size) from ${s}.artifacts a where a.repository = r.name), 0) from ${s}.repositories r`.execute(db);
      // A new repository starts with a usage row (the artifacts' triggers only update it: a
      // repository's cascade, which deletes that row too, never makes it again).
      await sql.raw(`create function ${SCHEMA}.usage_row() returns trigger language plpgsql as $$
        begin
          insert into ${SCHEMA}.repository_usage (repository) values (new.name) on conflict do nothing;
          return null;
        end $$`).execute(db);
      await sql.raw(`create trigger repositories_usage_row after insert on ${SCHEMA}.repositories for each row execute function ${SCHEMA}.usage_row()`).execute(db);
      // The size each statement adds to each repository, from its transition tables.
      const delta = (rows: string) => `with delta as (select repository, sum(size)::bigint as d from (${rows}) x group by repository having sum(size) <> 0)`;
      const count = (rows: string) => `${delta(rows)},
            moved as (update ${SCHEMA}.repository_usage u set used_bytes = u.used_bytes + delta.d from delta where u.repository = delta.repository returning u.repository, u.used_bytes, delta.d)
          select m.repository, m.used_bytes, m.d, r.quota_bytes into over from moved m join ${SCHEMA}.repositories r on r.name = m.repository
            where m.d > 0 and r.quota_bytes is not null and m.used_bytes > r.quota_bytes and r.type <> 'proxy' limit 1;`;
      await sql.raw(`create function ${SCHEMA}.count_usage() returns trigger language plpgsql as $$
        declare over record;
        begin
          if tg_op = 'INSERT' then
            ${count("select repository, size from new_rows")}
          elsif tg_op = 'UPDATE' then
            ${count("select repository, size from new_rows union all select repository, -size as size from old_rows")}
          else
            ${count("select repository, -size as size from old_rows")}
          end if;
          if found and current_setting('svc.quota', true) is distinct from 'off' then
            raise exception using errcode = '${OVER_QUOTA}',
              message = format('repository %s is over its storage quota', over.repository),
              detail = json_build_object('repository', over.repository, 'adding', over.d, 'used', over.used_bytes - over.d, 'quota', over.quota_bytes)::text;
          end if;
          return null;
        end $$`).execute(db);
      await sql.raw(`create trigger artifacts_usage_insert after insert on ${SCHEMA}.artifacts referencing new table as new_rows for each statement execute function ${SCHEMA}.count_usage()`).execute(db);
      await sql.raw(`create trigger artifacts_usage_update after update on ${SCHEMA}.artifacts referencing old table as old_rows new table as new_rows for each statement execute function ${SCHEMA}.count_usage()`).execute(db);
      await sql.raw(`create trigger artifacts_usage_delete after delete on ${SCHEMA}.artifacts referencing old table as old_rows for each statement execute function ${SCHEMA}.count_usage()`).execute(db);
    },
  },
};
