import type { Kysely } from "kysely";
import { SCHEMA, type ArtifactsDatabase } from "./schema.js";

/** Repository configuration and per-artifact metadata (size, digest) in Postgres. */
export function metadataStoreFactory(root: Kysely<ArtifactsDatabase>) {
  const db = () => root.withSchema(SCHEMA);
  return {
    async ensureRepository(name: string, format: string) {
      await db().insertInto("repositories").values({ name, format }).onConflict((oc) => oc.column("name").doNothing()).execute();
    },
    async repositoryNames(): Promise<string[]> {
      const rows = await db().selectFrom("repositories").select("name").execute();
      return rows.map((r) => r.name);
    },
    async recordArtifact(a: { repository: string; path: string; size: number; sha256: string; contentType: string | null }) {
      const now = new Date();
      await db()
        .insertInto("artifacts")
        .values({ repository: a.repository, path: a.path, size: a.size, sha256: a.sha256, content_type: a.contentType, updated_at: now })
        .onConflict((oc) => oc.columns(["repository", "path"]).doUpdateSet({ size: a.size, sha256: a.sha256, content_type: a.contentType, updated_at: now }))
        .execute();
    },
    async forgetArtifact(repository: string, path: string) {
      await db().deleteFrom("artifacts").where("repository", "=", repository).where("path", "=", path).execute();
    },
  };
}
export type MetadataStore = ReturnType<typeof metadataStoreFactory>;
