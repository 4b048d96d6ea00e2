import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Db } from "../../store/metadata-store.js";
import { SCHEMA } from "../../store/schema.js";

const t = (name: string) => sql.id(SCHEMA, name);

/**
 * An upload session idle this long is over (BLOB_UPLOAD_UNKNOWN). Until then its chunks, blobs
 * no index row references yet, count as referenced (liveChunk, MetadataStore.referenced): the
 * reclaim walk leaves them however long the upload takes, on whichever node it continues.
 */
export const UPLOAD_IDLE_MS = 30 * 60_000;

/** Whether a chunk of an upload session not yet idle past UPLOAD_IDLE_MS holds this content. */
export async function liveChunk(db: Db, sha256: string): Promise<boolean> {
  const r = await sql`select 1 from ${t("oci_upload_chunks")} c join ${t("oci_uploads")} u on u.id = c.upload_id
    where c.sha256 = ${sha256} and u.updated_at > now() - make_interval(secs => ${UPLOAD_IDLE_MS / 1000}) limit 1`.execute(db);
  return r.rows.length > 0;
}

/** What a manifest is, beside its bytes (the referrers API reads these). */
export interface ManifestRow {
  repository: string;
  name: string;
  digest: string;
  path: string;
  mediaType: string;
  artifactType: string | null;
  subject: string | null;
  size: number;
  annotations: Record<string, string> | null;
}

export interface UploadSession {
  id: string;
  repository: string;
  name: string;
  /** Bytes received so far (the next chunk starts here). */
  size: number;
  chunks: number;
  /** Since the last chunk arrived (or the session began). */
  idleMs: number;
}

export interface UploadChunk {
  seq: number;
  sha256: string;
  size: number;
}

type RawManifest = { repository: string; name: string; digest: string; path: string; media_type: string; artifact_type: string | null; subject: string | null; size: string; annotations: Record<string, string> | null };
const manifestOf = (r: RawManifest): ManifestRow => ({
  repository: r.repository,
  name: r.name,
  digest: r.digest,
  path: r.path,
  mediaType: r.media_type,
  artifactType: r.artifact_type,
  subject: r.subject,
  size: Number(r.size),
  annotations: r.annotations,
});

/** The OCI format's rows (oci-migrations.ts); each method takes the database or a transaction. */
export function ociStoreFactory(root: Db) {
  return {
    /** Records a manifest (in its publish's transaction: the row follows its index row by a deferred foreign key). */
    async recordManifest(tx: Db, m: ManifestRow): Promise<void> {
      await sql`insert into ${t("oci_manifests")} (repository, name, digest, path, media_type, artifact_type, subject, size, annotations)
        values (${m.repository}, ${m.name}, ${m.digest}, ${m.path}, ${m.mediaType}, ${m.artifactType}, ${m.subject}, ${m.size}, ${m.annotations === null ? null : JSON.stringify(m.annotations)}::jsonb)
        on conflict (repository, name, digest) do update set media_type = excluded.media_type, artifact_type = excluded.artifact_type, subject = excluded.subject, size = excluded.size, annotations = excluded.annotations`.execute(tx);
    },

    /**
     * Points a tag at a manifest. With `immutable`, a tag set already stays where it is: answers
     * the digest it names then (the caller refuses a move), else the one given.
     */
    async setTag(tx: Db, repository: string, name: string, tag: string, digest: string, immutable: boolean): Promise<string> {
      if (!immutable) {
        await sql`insert into ${t("oci_tags")} (repository, name, tag, digest) values (${repository}, ${name}, ${tag}, ${digest})
          on conflict (repository, name, tag) do update set digest = excluded.digest, updated_at = now()`.execute(tx);
        return digest;
      }
      // Two first pushes at once: the second insert finds the first's row, whose digest it answers.
      await sql`insert into ${t("oci_tags")} (repository, name, tag, digest) values (${repository}, ${name}, ${tag}, ${digest}) on conflict do nothing`.execute(tx);
      return (await this.tag(repository, name, tag, tx)) ?? digest;
    },

    /** Whether any tag names the manifest `digest`. */
    async tagged(repository: string, name: string, digest: string): Promise<boolean> {
      const r = await sql`select 1 from ${t("oci_tags")} where repository = ${repository} and name = ${name} and digest = ${digest} limit 1`.execute(root);
      return r.rows.length > 0;
    },

    async immutableTags(repository: string): Promise<boolean> {
      const r = await sql<{ immutable_tags: boolean }>`select immutable_tags from ${t("oci_options")} where repository = ${repository}`.execute(root);
      return r.rows[0]?.immutable_tags ?? false;
    },

    async setImmutableTags(repository: string, on: boolean): Promise<void> {
      await sql`insert into ${t("oci_options")} (repository, immutable_tags) values (${repository}, ${on}) on conflict (repository) do update set immutable_tags = excluded.immutable_tags`.execute(root);
    },

    /** Image retention (oci-gc.ts): null where not set. */
    async retention(repository: string): Promise<{ keepTags: number | null; untaggedAfter: string | null }> {
      const r = await sql<{ keep_tags: number | null; untagged_after: string | null }>`select keep_tags, untagged_after from ${t("oci_options")} where repository = ${repository}`.execute(root);
      return { keepTags: r.rows[0]?.keep_tags ?? null, untaggedAfter: r.rows[0]?.untagged_after ?? null };
    },

    /** Sets those given (null: no longer set). */
    async setRetention(repository: string, v: { keepTags?: number | null; untaggedAfter?: string | null }): Promise<void> {
      await sql`insert into ${t("oci_options")} (repository) values (${repository}) on conflict (repository) do nothing`.execute(root);
      if (v.keepTags !== undefined) await sql`update ${t("oci_options")} set keep_tags = ${v.keepTags} where repository = ${repository}`.execute(root);
      if (v.untaggedAfter !== undefined) await sql`update ${t("oci_options")} set untagged_after = ${v.untaggedAfter} where repository = ${repository}`.execute(root);
    },

    async tag(repository: string, name: string, tag: string, tx?: Db): Promise<string | undefined> {
      const r = await sql<{ digest: string }>`select digest from ${t("oci_tags")} where repository = ${repository} and name = ${name} and tag = ${tag}`.execute(tx ?? root);
      return r.rows[0]?.digest;
    },

    async deleteTag(repository: string, name: string, tag: string): Promise<boolean> {
      const r = await sql`delete from ${t("oci_tags")} where repository = ${repository} and name = ${name} and tag = ${tag}`.execute(root);
      return Number(r.numAffectedRows ?? 0) > 0;
    },

    /** Tags of an image in byte order after `last`, at most `n`; undefined when the image has no manifest at all. */
    async tags(repository: string, name: string, last: string | undefined, n: number): Promise<string[] | undefined> {
      const r = await sql<{ tag: string }>`select tag from ${t("oci_tags")} where repository = ${repository} and name = ${name}
        and (${last ?? null}::text is null or tag collate "C" > ${last ?? ""} collate "C") order by tag collate "C" limit ${n}`.execute(root);
      if (r.rows.length) return r.rows.map((x) => x.tag);
      const any = await sql`select 1 from ${t("oci_manifests")} where repository = ${repository} and name = ${name} limit 1`.execute(root);
      return any.rows.length ? [] : undefined;
    },

    /** Images (`<repository>/<name>`) in byte order after `last`, at most `n`, in the repositories `visible` names. */
    async catalog(last: string | undefined, n: number): Promise<string[]> {
      const r = await sql<{ image: string }>`select distinct repository || '/' || name as image from ${t("oci_manifests")}
        where (${last ?? null}::text is null or (repository || '/' || name) collate "C" > ${last ?? ""} collate "C")
        order by 1 limit ${n}`.execute(root);
      return r.rows.map((x) => x.image);
    },

    async manifest(repository: string, name: string, digest: string, tx?: Db): Promise<ManifestRow | undefined> {
      const r = await sql<RawManifest>`select * from ${t("oci_manifests")} where repository = ${repository} and name = ${name} and digest = ${digest}`.execute(tx ?? root);
      return r.rows[0] ? manifestOf(r.rows[0]) : undefined;
    },

    /** The manifests whose subject is `digest`, optionally of one artifact type, in digest order. */
    async referrers(repository: string, name: string, digest: string, artifactType: string | undefined): Promise<ManifestRow[]> {
      const r = await sql<RawManifest>`select * from ${t("oci_manifests")} where repository = ${repository} and name = ${name} and subject = ${digest}
        and (${artifactType ?? null}::text is null or artifact_type = ${artifactType ?? ""}) order by digest limit 1000`.execute(root);
      return r.rows.map(manifestOf);
    },

    // Upload sessions: in Postgres, so a PATCH or PUT reaching any node continues the upload.

    /** Begins a session; sessions idle for `expireMs` go first (what they held is left to the reclaim walk). */
    async startUpload(repository: string, name: string, expireMs: number): Promise<UploadSession> {
      const id = randomUUID();
      await sql`delete from ${t("oci_uploads")} where updated_at < now() - make_interval(secs => ${expireMs / 1000})`.execute(root);
      await sql`insert into ${t("oci_uploads")} (id, repository, name) values (${id}, ${repository}, ${name})`.execute(root);
      return { id, repository, name, size: 0, chunks: 0, idleMs: 0 };
    },

    async upload(id: string, tx?: Db, forUpdate = false): Promise<UploadSession | undefined> {
      const lock = forUpdate ? sql` for update` : sql``;
      const r = await sql<{ id: string; repository: string; name: string; size: string; chunks: number; idle_ms: number }>`select id, repository, name, size, chunks,
        (extract(epoch from now() - updated_at) * 1000)::float8 as idle_ms from ${t("oci_uploads")} where id = ${id}${lock}`.execute(tx ?? root);
      const row = r.rows[0];
      return row ? { id: row.id, repository: row.repository, name: row.name, size: Number(row.size), chunks: row.chunks, idleMs: Number(row.idle_ms) } : undefined;
    },

    /**
     * Appends a chunk stored already (its blob committed) if the session still ends at `start`:
     * under the session row's lock, so two nodes appending at once cannot both land. Answers the
     * session after, or its current state when it ended elsewhere (`conflict`).
     */
    async appendChunk(id: string, start: number, chunk: { sha256: string; size: number }): Promise<{ session: UploadSession; conflict: boolean } | undefined> {
      return root.transaction().execute(async (tx) => {
        const s = await this.upload(id, tx, true);
        if (!s) return undefined;
        if (s.size !== start) return { session: s, conflict: true };
        if (chunk.size === 0) return { session: s, conflict: false };
        await sql`insert into ${t("oci_upload_chunks")} (upload_id, seq, sha256, size) values (${id}, ${s.chunks}, ${chunk.sha256}, ${chunk.size})`.execute(tx);
        await sql`update ${t("oci_uploads")} set size = size + ${chunk.size}, chunks = chunks + 1, updated_at = now() where id = ${id}`.execute(tx);
        return { session: { ...s, size: s.size + chunk.size, chunks: s.chunks + 1, idleMs: 0 }, conflict: false };
      });
    },

    async chunks(id: string): Promise<UploadChunk[]> {
      const r = await sql<{ seq: number; sha256: string; size: string }>`select seq, sha256, size from ${t("oci_upload_chunks")} where upload_id = ${id} order by seq`.execute(root);
      return r.rows.map((c) => ({ seq: c.seq, sha256: c.sha256, size: Number(c.size) }));
    },

    async endUpload(id: string): Promise<boolean> {
      const r = await sql`delete from ${t("oci_uploads")} where id = ${id}`.execute(root);
      return Number(r.numAffectedRows ?? 0) > 0;
    },
  };
}

export type OciStore = ReturnType<typeof ociStoreFactory>;
