import type { MetadataStore } from "../../store/metadata-store.js";
import type { ArtifactCopier, CopyOutcome } from "../../domain/export-steps.js";
import { EXPORT_PAGE } from "../../domain/export-steps.js";
import { isSnapshot, parseMavenPath } from "./maven-layout.js";
import type { ExportJob, FormatExport } from "../../domain/repository-export.js";

export interface MavenExportDeps {
  metadata: Pick<MetadataStore, "page" | "find" | "browse">;
  /** Copies a file of the layout as a deploy lands it (MavenRepository.deploy: versions and snapshot builds recorded). */
  deploy: ArtifactCopier;
  /** Copies what is kept as a plain file (a group's plugin list). */
  copy: ArtifactCopier;
}

/** The release's folder, `<group as folders>/<artifactId>/<version>/`, and its coordinates for reasons. */
const releaseOf = (path: string): { folder: string; name: string } | undefined => {
  const p = parseMavenPath(path.split("/"));
  if (p.kind !== "file" || isSnapshot(p.version)) return undefined;
  return { folder: path.slice(0, path.lastIndexOf("/") + 1), name: `${p.groupId}:${p.artifactId}:${p.version}` };
};

/**
 * A maven repository: every file, deployed into the target as `mvn deploy` would (so the
 * target's own `maven-metadata.xml` lists each version and snapshot build, and its checksums
 * are computed), skipped where the target holds the same file, refused where it holds another.
 * A release is deployed once: a release the target holds already with any file the source's
 * does not have identically is another build of it, and none of the source's files are added
 * to it. A target release holding only files identical to the source's (an interrupted export,
 * say) is completed.
 */
export function mavenExportFactory(deps: MavenExportDeps): FormatExport {
  /** Why the target's release at `folder` takes nothing from the source; undefined when it may. */
  const releaseVerdict = async (job: ExportJob, folder: string, name: string): Promise<string | undefined> => {
    let after: string | undefined;
    for (;;) {
      const held = await deps.metadata.browse(job.target, { prefix: folder, after, limit: EXPORT_PAGE });
      for (const t of held) {
        const s = await deps.metadata.find(job.source, t.path);
        if (s?.sha256 !== t.sha256) {
          const which = t.path.slice(folder.length);
          return `${job.target} holds release ${name} already, with ${which} ${s ? "different from" : "not in"} ${job.source}'s: a release is deployed once`;
        }
      }
      if (held.length < EXPORT_PAGE) return undefined;
      after = held[held.length - 1]!.path;
    }
  };

  return {
    async copy(job) {
      // The source's files come in path order, so a release's files come together: one verdict each.
      let verdict: { folder: string; refusal: string | undefined } | undefined;
      let after: string | undefined;
      for (;;) {
        const rows = await deps.metadata.page(job.source, after, EXPORT_PAGE);
        for (const row of rows) {
          if (job.signal.aborted) return;
          if (job.selects && !job.selects(row.path)) continue;
          const release = releaseOf(row.path);
          let out: CopyOutcome;
          if (release) {
            if (verdict?.folder !== release.folder) verdict = { folder: release.folder, refusal: await releaseVerdict(job, release.folder, release.name) };
            const same = verdict.refusal !== undefined && (await deps.metadata.find(job.target, row.path))?.sha256 === row.sha256;
            out = verdict.refusal === undefined ? await deps.deploy(job, row) : same ? { kind: "skipped" } : { kind: "refused", reason: verdict.refusal };
          } else {
            out = parseMavenPath(row.path.split("/")).kind === "file" ? await deps.deploy(job, row) : await deps.copy(job, row);
          }
          if (out.kind === "refused") job.tally.refused(row.path, out.reason);
          else job.tally[out.kind](row.path);
        }
        if (rows.length < EXPORT_PAGE) return;
        after = rows[rows.length - 1]!.path;
      }
    },
  };
}
