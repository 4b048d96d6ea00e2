import { sql, type Kysely, type Migration } from "kysely";
import { SCHEMA } from "../../store/schema.js";

/**
 * The OCI format's tables (store/migrations.ts migrationsOf puts them in order with the
 * service's). Bytes and their index rows are the service's (`<name>/blobs/<digest>`,
 * `<name>/manifests/<digest>` in the path index); these say what a manifest is (its media type,
 * subject and artifact type, for the referrers API), which tag names which manifest, and where an
 * upload session is (in Postgres, so any node continues it).
 */
export const ociMigrations: Readonly<Record<string, Migration>> = {
  "0023_oci_registry": {
    async up(db: Kysely<unknown>) {
      const t = (name: string) => sql.id(SCHEMA, name);
      await sql`create table ${t("oci_manifests")} (
        repository text not null,
        name text not null,
        digest text not null,
        path text not null,
        media_type text not null,
        artifact_type text,
        subject text,
        size bigint not null,
        annotations jsonb,
        created_at timestamptz not null default now(),
        primary key (repository, name, digest)
      )`.execute(db);
      // A manifest's row goes with its index row, whatever removes it (a DELETE, retention, a forced repository removal).
      await sql`create unique index oci_manifests_by_path on ${t("oci_manifests")} (repository, path)`.execute(db);
      await sql`alter table ${t("oci_manifests")} add constraint oci_manifests_artifact foreign key (repository, path) references ${t("artifacts")} (repository, path) on delete cascade deferrable initially deferred`.execute(db);
      await sql`create index oci_manifests_by_subject on ${t("oci_manifests")} (repository, name, subject) where subject is not null`.execute(db);
      await sql`create table ${t("oci_tags")} (
        repository text not null,
        name text not null,
        tag text not null,
        digest text not null,
        updated_at timestamptz not null default now(),
        primary key (repository, name, tag),
        constraint oci_tags_manifest foreign key (repository, name, digest) references ${t("oci_manifests")} (repository, name, digest) on delete cascade deferrable initially deferred
      )`.execute(db);
      await sql`create index oci_tags_by_digest on ${t("oci_tags")} (repository, name, digest)`.execute(db);
      await sql`create table ${t("oci_uploads")} (
        id uuid primary key,
        repository text not null references ${t("repositories")} (name) on delete cascade,
        name text not null,
        size bigint not null default 0,
        chunks integer not null default 0,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`.execute(db);
      // Per repository: a pushed tag cannot be moved or deleted (PUT /api/repositories/<name>/oci).
      await sql`create table ${t("oci_options")} (
        repository text primary key references ${t("repositories")} (name) on delete cascade,
        immutable_tags boolean not null default false
      )`.execute(db);
      await sql`create table ${t("oci_upload_chunks")} (
        upload_id uuid not null references ${t("oci_uploads")} (id) on delete cascade,
        seq integer not null,
        sha256 text not null,
        size bigint not null,
        primary key (upload_id, seq)
      )`.execute(db);
    },
  },
  "0023_oci_registry_refs": {
    async up(db: Kysely<unknown>) {
      const t = (name: string) => sql.id(SCHEMA, name);
      // What each manifest references (garbage collection, oci-gc.ts): its config and layers
      // (kind 'blob') and an index's child manifests (kind 'manifest'); never its subject. Keyed
      // by the manifest's path and removed by the format's `removing` hook, which notes when its
      // blobs lost the reference (oci_released), so the grace counts from then.
      await sql`create table ${t("oci_manifest_refs")} (
        repository text not null references ${t("repositories")} (name) on delete cascade,
        name text not null,
        manifest_path text not null,
        digest text not null,
        kind text not null,
        primary key (repository, manifest_path, kind, digest)
      )`.execute(db);
      await sql`create index oci_manifest_refs_by_digest on ${t("oci_manifest_refs")} (repository, name, kind, digest)`.execute(db);
      await sql`create table ${t("oci_released")} (
        repository text not null references ${t("repositories")} (name) on delete cascade,
        path text not null,
        at timestamptz not null default now(),
        primary key (repository, path)
      )`.execute(db);
      // Manifests pushed before: their references are read from their bytes by the first collection.
      await sql`alter table ${t("oci_manifests")} add column refs_recorded boolean not null default false`.execute(db);
      // Per repository: image retention (keep the newest N tags of each image; remove untagged manifests after a while).
      await sql`alter table ${t("oci_options")} add column keep_tags integer, add column untagged_after text`.execute(db);
    },
  },
};
