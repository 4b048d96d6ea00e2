import { sql } from "kysely";
import type { BlobStore } from "@svc/blobs";
import { durationMs, parseIsoDuration } from "@svc/kit";
import type { Actor } from "@svc/contracts";
import type { ArtifactService } from "../../domain/artifact-service.js";
import type { Db } from "../../store/metadata-store.js";
import { SCHEMA } from "../../store/schema.js";
import type { CollectStep } from "../format.js";
import { parseManifest, type ParsedManifest } from "./oci-manifest.js";
import { ociAddress } from "./oci-routes.js";
import { UPLOAD_IDLE_MS } from "./oci-store.js";

const t = (name: string) => sql.id(SCHEMA, name);

/** What a manifest keeps: its config and layers (blobs) and an index's child manifests. A subject is not kept by its referrers. */
export interface References {
  blobs: string[];
  manifests: string[];
}

/** The references a manifest records (oci_manifest_refs), each once. */
export function referencesOf(m: Pick<ParsedManifest, "blobs" | "manifests">): References {
  return { blobs: [...new Set(m.blobs)], manifests: [...new Set(m.manifests)] };
}

/** The image of a blob or manifest path (`<name>/blobs/<digest>`), and the digest. */
const IMAGE_OF = (kind: "blobs" | "manifests") => `^(.*)/${kind}/[^/]+$`;
const DIGEST_OF = (kind: "blobs" | "manifests") => `/${kind}/([^/]+)$`;

/**
 * Records a manifest's references in its publish's transaction, after locking (`for share`) the
 * index row of each blob and child manifest it names: a collection removing one of them locks
 * that row `for update` and then looks for references, so either the collection went first (the
 * row is gone: the push fails with MANIFEST_BLOB_UNKNOWN, `missing` answers the digest) or the
 * push did (the collection, waiting on the lock, then sees the references committed and keeps
 * the row). Answers the first digest not found, or undefined when all are there.
 */
export async function lockAndRecordReferences(tx: Db, repository: string, name: string, manifestPath: string, refs: References): Promise<string | undefined> {
  const wanted = [...refs.blobs.map((d) => ({ d, path: ociAddress(repository, name, "blobs", d).path })), ...refs.manifests.map((d) => ({ d, path: ociAddress(repository, name, "manifests", d).path }))];
  for (const w of wanted) {
    const r = await sql`select 1 from ${t("artifacts")} where repository = ${repository} and path = ${w.path} for share`.execute(tx);
    if (!r.rows.length) return w.d;
  }
  await sql`delete from ${t("oci_manifest_refs")} where repository = ${repository} and manifest_path = ${manifestPath}`.execute(tx);
  for (const [kind, list] of [["blob", refs.blobs], ["manifest", refs.manifests]] as const) {
    for (const d of list) {
      await sql`insert into ${t("oci_manifest_refs")} (repository, name, manifest_path, digest, kind) values (${repository}, ${name}, ${manifestPath}, ${d}, ${kind}) on conflict do nothing`.execute(tx);
    }
  }
  await sql`update ${t("oci_manifests")} set refs_recorded = true where repository = ${repository} and path = ${manifestPath}`.execute(tx);
  return undefined;
}

/**
 * A manifest's index row going (a DELETE, retention, a repair): its references go, and the
 * blobs and child manifests it referenced are noted as released now, so the grace is counted
 * from this moment rather than from their own push.
 */
export async function releaseReferences(tx: Db, repository: string, manifestPath: string): Promise<void> {
  const gone = await sql<{ name: string; digest: string; kind: string }>`delete from ${t("oci_manifest_refs")} where repository = ${repository} and manifest_path = ${manifestPath} returning name, digest, kind`.execute(tx);
  for (const g of gone.rows) {
    const path = ociAddress(repository, g.name, g.kind === "blob" ? "blobs" : "manifests", g.digest).path;
    await sql`insert into ${t("oci_released")} (repository, path) values (${repository}, ${path}) on conflict (repository, path) do update set at = now()`.execute(tx);
  }
}

/**
 * The blob rows of `repository` that garbage collection may remove (one when `path` is given):
 * no manifest of their image references them, no upload session of their image is open (a push
 * under way uploads its blobs before the manifest that names them), and neither pushed nor
 * released (by a manifest removed) within the grace. Held rows are never removed.
 */
function orphanBlobs(db: Db, repository: string, graceMs: number, at: { after?: string; path?: string }, limit: number) {
  return sql<{ path: string }>`select a.path from ${t("artifacts")} a
    left join ${t("oci_released")} r on r.repository = a.repository and r.path = a.path
    where a.repository = ${repository} and a.path ~ ${DIGEST_OF("blobs")} and a.held_reason is null
      and (${at.path ?? null}::text is null or a.path = ${at.path ?? ""})
      and (${at.after ?? null}::text is null or a.path collate "C" > ${at.after ?? ""} collate "C")
      and greatest(a.updated_at, coalesce(r.at, '-infinity'::timestamptz)) < now() - make_interval(secs => ${graceMs / 1000})
      and not exists (select 1 from ${t("oci_manifest_refs")} f where f.repository = a.repository and f.kind = 'blob'
        and f.name = substring(a.path from ${IMAGE_OF("blobs")}) and f.digest = substring(a.path from ${DIGEST_OF("blobs")}))
      and not exists (select 1 from ${t("oci_uploads")} u where u.repository = a.repository and u.name = substring(a.path from ${IMAGE_OF("blobs")})
        and u.updated_at > now() - make_interval(secs => ${UPLOAD_IDLE_MS / 1000}))
    order by a.path collate "C" limit ${limit}`.execute(db);
}

/**
 * The manifests image retention removes (one when `path` is given): no tag names them, pushed
 * longer than `afterMs` ago, not a child of an index that is there, and not a referrer (a
 * signature, an SBOM) of a manifest that is there. Held rows are never removed.
 */
function untaggedManifests(db: Db, repository: string, afterMs: number, at: { path?: string }, limit: number) {
  return sql<{ path: string }>`select m.path from ${t("oci_manifests")} m join ${t("artifacts")} a on a.repository = m.repository and a.path = m.path
    where m.repository = ${repository} and a.held_reason is null
      and (${at.path ?? null}::text is null or m.path = ${at.path ?? ""})
      and a.updated_at < now() - make_interval(secs => ${afterMs / 1000})
      and not exists (select 1 from ${t("oci_tags")} g where g.repository = m.repository and g.name = m.name and g.digest = m.digest)
      and not exists (select 1 from ${t("oci_manifest_refs")} f where f.repository = m.repository and f.name = m.name and f.kind = 'manifest' and f.digest = m.digest)
      and (m.subject is null or not exists (select 1 from ${t("oci_manifests")} s where s.repository = m.repository and s.name = m.name and s.digest = m.subject))
    order by m.path collate "C" limit ${limit}`.execute(db);
}

const lockRow = (tx: Db, repository: string, path: string) => sql`select 1 from ${t("artifacts")} where repository = ${repository} and path = ${path} for update`.execute(tx);

export interface OciRetention {
  keepTags: number | null;
  untaggedAfter: string | null;
}

const PAGE = 500;
const COLLECTOR: Actor = { kind: "system", id: "walker" };

/** Garbage collection and image retention of OCI repositories, the walker's `collect` steps (docs/integration/oci.md). */
export function ociCollector(deps: { db: Db; blobs: BlobStore; artifacts: Pick<ArtifactService, "removeIf">; retention: (repository: string) => Promise<OciRetention> }) {
  const { db } = deps;

  /** Manifests pushed before references were recorded: read from their bytes once. */
  const recordOlder = async (repository: string) => {
    const older = await sql<{ name: string; path: string; media_type: string; sha256: string }>`select m.name, m.path, m.media_type, a.sha256 from ${t("oci_manifests")} m
      join ${t("artifacts")} a on a.repository = m.repository and a.path = m.path where m.repository = ${repository} and not m.refs_recorded`.execute(db);
    for (const m of older.rows) {
      const stream = await deps.blobs.get(m.sha256);
      if (!stream) continue;
      const chunks: Buffer[] = [];
      for await (const c of stream) chunks.push(c as Buffer);
      let parsed: ParsedManifest;
      try {
        parsed = parseManifest(Buffer.concat(chunks), m.media_type);
      } catch {
        parsed = { mediaType: m.media_type, blobs: [], manifests: [], subject: null, artifactType: null, annotations: null };
      }
      // Whatever it names that is gone already is simply not referenced (nothing to lock).
      await db.transaction().execute(async (tx) => {
        const refs = referencesOf(parsed);
        for (const [kind, list] of [["blob", refs.blobs], ["manifest", refs.manifests]] as const) {
          for (const d of list) await sql`insert into ${t("oci_manifest_refs")} (repository, name, manifest_path, digest, kind) values (${repository}, ${m.name}, ${m.path}, ${d}, ${kind}) on conflict do nothing`.execute(tx);
        }
        await sql`update ${t("oci_manifests")} set refs_recorded = true where repository = ${repository} and path = ${m.path}`.execute(tx);
      });
    }
  };

  const gc = async (repository: string, graceMs: number) => {
    const counts = { collected: 0, collectedBytes: 0 };
    await recordOlder(repository);
    let after: string | undefined;
    for (;;) {
      const page = (await orphanBlobs(db, repository, graceMs, { after }, PAGE)).rows;
      for (const { path } of page) {
        const a = { repository, path, segments: path.split("/") };
        // Under the path's lock and the row's `for update`: still an orphan (see lockAndRecordReferences).
        const out = await deps.artifacts.removeIf(
          a,
          async (tx) => {
            await lockRow(tx, repository, path);
            return (await orphanBlobs(tx, repository, graceMs, { path }, 1)).rows.length > 0;
          },
          "collected",
          COLLECTOR,
        );
        if (out.removed) {
          counts.collected++;
          counts.collectedBytes += out.size;
        }
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!.path;
    }
    // Releases older than the grace say nothing any more.
    await sql`delete from ${t("oci_released")} where repository = ${repository} and at < now() - make_interval(secs => ${graceMs / 1000})`.execute(db);
    return counts;
  };

  const retention = async (repository: string) => {
    const counts = { tagsRemoved: 0, untaggedRemoved: 0, untaggedBytes: 0 };
    const policy = await deps.retention(repository);
    if (policy.keepTags !== null) {
      const r = await sql`delete from ${t("oci_tags")} g using (
          select name, tag, row_number() over (partition by name order by updated_at desc, tag collate "C" desc) as n from ${t("oci_tags")} where repository = ${repository}
        ) o where g.repository = ${repository} and g.name = o.name and g.tag = o.tag and o.n > ${policy.keepTags}`.execute(db);
      counts.tagsRemoved = Number(r.numAffectedRows ?? 0);
    }
    const d = policy.untaggedAfter === null ? undefined : parseIsoDuration(policy.untaggedAfter);
    if (d) {
      const afterMs = durationMs(d);
      const seen = new Set<string>();
      for (;;) {
        const page = (await untaggedManifests(db, repository, afterMs, {}, PAGE)).rows.filter((r) => !seen.has(r.path));
        if (!page.length) break;
        for (const { path } of page) {
          seen.add(path);
          const out = await deps.artifacts.removeIf(
            { repository, path, segments: path.split("/") },
            async (tx) => {
              await lockRow(tx, repository, path);
              return (await untaggedManifests(tx, repository, afterMs, { path }, 1)).rows.length > 0;
            },
            "retention",
            COLLECTOR,
          );
          if (out.removed) {
            counts.untaggedRemoved++;
            counts.untaggedBytes += out.size;
          }
        }
      }
    }
    return counts;
  };

  return {
    collect: async (repository: string, step: CollectStep, opts: { graceMs: number }): Promise<Record<string, number>> =>
      step === "gc" ? gc(repository, opts.graceMs) : retention(repository),
  };
}
