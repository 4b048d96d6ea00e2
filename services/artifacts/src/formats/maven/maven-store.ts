import { sql } from "kysely";
import type { SnapshotRow, VersionRow } from "./maven-metadata.js";
import { groupPath } from "./maven-layout.js";
import type { Db } from "../../store/metadata-store.js";
import { SCHEMA } from "../../store/schema.js";

export interface Digests {
  sha1: string;
  md5: string;
  sha256: string;
  sha512: string;
}

export interface ArtifactKey {
  repository: string;
  groupId: string;
  artifactId: string;
}

/**
 * Maven versions, snapshot builds, content digests and repository options in Postgres. Every
 * change to one artifact's rows runs in the transaction of a file's publish or removal, holding
 * the file's path lock and then the artifact's (lockArtifact), so deploys of one artifact from
 * several clients or replicas are recorded one after the other.
 */
export function mavenStoreFactory(root: Db) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  return {
    async lockArtifact(tx: Db, k: ArtifactKey): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`${k.repository}/${k.groupId}:${k.artifactId}`}, 6271))`.execute(tx);
    },

    async versions(k: ArtifactKey, tx?: Db): Promise<VersionRow[]> {
      const rows = await db(tx)
        .selectFrom("maven_versions")
        .select(["version", "deployed_at", "updated_at"])
        .where("repository", "=", k.repository)
        .where("group_id", "=", k.groupId)
        .where("artifact_id", "=", k.artifactId)
        .execute();
      return rows.map((r) => ({ version: r.version, deployed: r.deployed_at, updated: r.updated_at }));
    },

    /**
     * The versions of an artifact with a held file (the screening gate, docs/administration/screening.md):
     * maven-metadata.xml leaves them out, so a build resolves the newest version it may download.
     */
    async heldVersions(k: ArtifactKey): Promise<Set<string>> {
      const prefix = `${groupPath(k.groupId)}/${k.artifactId}/`;
      const pattern = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const rows = await db()
        .selectFrom("artifacts")
        .select("path")
        .where("repository", "=", k.repository)
        .where("held_reason", "is not", null)
        .where(sql<boolean>`(path collate "C") like ${pattern}`)
        .execute();
      return new Set(rows.map((r) => r.path.slice(prefix.length).split("/")[0]!));
    },

    /** The upstream publish times known of some versions of a proxied artifact (the cooldown's), by version. */
    async publishTimes(k: ArtifactKey, versions: readonly string[]): Promise<Map<string, Date>> {
      if (versions.length === 0) return new Map();
      const rows = await db()
        .selectFrom("maven_publish_times")
        .select(["version", "published_at"])
        .where("repository", "=", k.repository)
        .where("group_id", "=", k.groupId)
        .where("artifact_id", "=", k.artifactId)
        .where("version", "in", [...versions])
        .execute();
      return new Map(rows.map((r) => [r.version, r.published_at]));
    },

    /** Keeps a version's upstream publish time; the first one kept stays (answered), so every node reads the same. */
    async rememberPublishTime(k: ArtifactKey, version: string, at: Date): Promise<Date> {
      const row = await db()
        .insertInto("maven_publish_times")
        .values({ repository: k.repository, group_id: k.groupId, artifact_id: k.artifactId, version, published_at: at })
        .onConflict((oc) => oc.columns(["repository", "group_id", "artifact_id", "version"]).doUpdateSet({ published_at: sql`maven_publish_times.published_at` }))
        .returning("published_at")
        .executeTakeFirstOrThrow();
      return row.published_at;
    },

    async snapshots(k: ArtifactKey, version: string, tx?: Db): Promise<SnapshotRow[]> {
      const rows = await db(tx)
        .selectFrom("maven_snapshots")
        .select(["classifier", "extension", "value", "timestamp", "build_number", "updated_at"])
        .where("repository", "=", k.repository)
        .where("group_id", "=", k.groupId)
        .where("artifact_id", "=", k.artifactId)
        .where("version", "=", version)
        .execute();
      return rows.map((r) => ({ classifier: r.classifier, extension: r.extension, value: r.value, timestamp: r.timestamp, buildNumber: r.build_number, updated: r.updated_at }));
    },

    /**
     * `at` is when the file arrived: a deploy's now, or a backfilled file's modification time,
     * which may be earlier than what the row holds (so a row's first deploy only moves earlier
     * and its last update only later).
     */
    async recordVersion(tx: Db, k: ArtifactKey, version: string, at: Date): Promise<void> {
      await db(tx)
        .insertInto("maven_versions")
        .values({ repository: k.repository, group_id: k.groupId, artifact_id: k.artifactId, version, deployed_at: at, updated_at: at })
        .onConflict((oc) => oc.columns(["repository", "group_id", "artifact_id", "version"]).doUpdateSet({ deployed_at: sql`least(maven_versions.deployed_at, excluded.deployed_at)`, updated_at: sql`greatest(maven_versions.updated_at, excluded.updated_at)` }))
        .execute();
    },

    async recordSnapshot(tx: Db, k: ArtifactKey, version: string, s: Omit<SnapshotRow, "updated">, at: Date): Promise<void> {
      await db(tx)
        .insertInto("maven_snapshots")
        .values({ repository: k.repository, group_id: k.groupId, artifact_id: k.artifactId, version, classifier: s.classifier, extension: s.extension, value: s.value, timestamp: s.timestamp, build_number: s.buildNumber, updated_at: at })
        .onConflict((oc) => oc.columns(["repository", "group_id", "artifact_id", "version", "classifier", "extension", "value"]).doUpdateSet({ updated_at: sql`greatest(maven_snapshots.updated_at, excluded.updated_at)` }))
        .execute();
    },

    async forgetSnapshot(tx: Db, k: ArtifactKey, version: string, s: Pick<SnapshotRow, "classifier" | "extension" | "value">): Promise<void> {
      await db(tx)
        .deleteFrom("maven_snapshots")
        .where("repository", "=", k.repository)
        .where("group_id", "=", k.groupId)
        .where("artifact_id", "=", k.artifactId)
        .where("version", "=", version)
        .where("classifier", "=", s.classifier)
        .where("extension", "=", s.extension)
        .where("value", "=", s.value)
        .execute();
    },

    async forgetVersion(tx: Db, k: ArtifactKey, version: string): Promise<void> {
      await db(tx).deleteFrom("maven_versions").where("repository", "=", k.repository).where("group_id", "=", k.groupId).where("artifact_id", "=", k.artifactId).where("version", "=", version).execute();
    },

    async digests(sha256: string): Promise<Digests | undefined> {
      const r = await db().selectFrom("maven_digests").select(["sha1", "md5", "sha512"]).where("sha256", "=", sha256).executeTakeFirst();
      return r ? { ...r, sha256 } : undefined;
    },

    /** Content-addressed: the same content has the same digests, so a second writer changes nothing. */
    async recordDigests(d: Digests): Promise<void> {
      await db().insertInto("maven_digests").values(d).onConflict((oc) => oc.column("sha256").doNothing()).execute();
    },

    async releaseRedeploy(repository: string): Promise<boolean> {
      const r = await db().selectFrom("maven_settings").select("release_redeploy").where("repository", "=", repository).executeTakeFirst();
      return r?.release_redeploy ?? false;
    },

    async setReleaseRedeploy(repository: string, allowed: boolean): Promise<void> {
      await db()
        .insertInto("maven_settings")
        .values({ repository, release_redeploy: allowed })
        .onConflict((oc) => oc.column("repository").doUpdateSet({ release_redeploy: allowed }))
        .execute();
    },
  };
}
export type MavenStore = ReturnType<typeof mavenStoreFactory>;
