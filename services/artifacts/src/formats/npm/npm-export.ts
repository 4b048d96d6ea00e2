import { notFound } from "@svc/contracts";
import type { MetadataStore } from "../../store/metadata-store.js";
import type { NpmStore, NpmVersionRow } from "./npm-store.js";
import type { ArtifactCopier, CopyOutcome } from "../../domain/export-steps.js";
import { EXPORT_PAGE } from "../../domain/export-steps.js";
import type { ExportJob, FormatExport } from "../../domain/repository-export.js";

export interface NpmExportDeps {
  store: NpmStore;
  metadata: Pick<MetadataStore, "find" | "holdRepositoryOpen">;
  copy: ArtifactCopier;
  /** A proxy repository's packages as exported (its packuments as the upstream answered them, the versions whose tarballs it holds); absent: no proxies. */
  proxied?: NpmPackages;
}

/** What an export reads of a source's packages: their names in order, page by page, and each one's tags and versions. */
export interface NpmPackages {
  /** Whether it reads `repository` (else the hosted store is read). */
  reads(repository: string): boolean;
  names(repository: string, after: string | undefined, limit: number): Promise<string[]>;
  read(repository: string, name: string): Promise<{ distTags: Record<string, string>; versions: NpmVersionRow[] } | undefined>;
}

/**
 * An npm repository: every version of every package, as a publish would land it (the tarball
 * through the artifact copier, so its `artifact.published` event carries the npm coordinates;
 * then the version's manifest, deprecation included, and its publish time), then the dist-tags
 * the target does not have yet (a tag the target set itself is its own decision and stays).
 * One item per version, named by its tarball's path. A version the target holds with the same
 * tarball is skipped; with another tarball, or unpublished from the target, it is refused.
 */
export function npmExportFactory(deps: NpmExportDeps): FormatExport {
  const { store } = deps;

  const version = async (job: ExportJob, name: string, v: NpmVersionRow): Promise<CopyOutcome> => {
    const { source, target } = job;
    const row = await deps.metadata.find(source, v.tarball);
    if (!row) return { kind: "refused", reason: `the tarball of ${name}@${v.version} is missing from ${source}` };
    if (await store.wasUnpublished(target, name, v.version)) return { kind: "refused", reason: `${name}@${v.version} was unpublished from ${target}: npm never publishes a version number twice` };
    const held = (await store.versions(target, name)).find((t) => t.version === v.version);
    if (held) {
      const there = await deps.metadata.find(target, held.tarball);
      return there?.sha256 === row.sha256 ? { kind: "skipped" } : { kind: "refused", reason: `${target} has another ${name}@${v.version} (a different tarball): published versions are immutable` };
    }
    const file = await deps.copy(job, row);
    if (file.kind === "refused") return file;
    const added = await store.transaction(async (tx) => {
      // The target's removal began: the export stops (a 404 names the repository).
      if (!(await deps.metadata.holdRepositoryOpen(tx, target))) throw notFound(`no repository named ${target}`);
      await store.lockPackage(tx, target, name);
      if (await store.wasUnpublished(target, name, v.version, tx)) return false;
      await store.ensurePackage(tx, target, name);
      if (!(await store.insertVersion(tx, { repository: target, name, version: v.version, manifest: v.manifest, tarball: v.tarball, published: v.published }))) return false;
      const pkg = (await store.findPackage(target, name, tx))!;
      await store.touch(tx, target, name, pkg.distTags.latest === undefined ? { ...pkg.distTags, latest: v.version } : undefined);
      return true;
    });
    // A publish of the same version to the target won the race: its content decides.
    return added ? { kind: "copied" } : { kind: "refused", reason: `${name}@${v.version} was published to or unpublished from ${target} during the export` };
  };

  /**
   * The source's dist-tags, where the target has the version they point at: all of them for a
   * package the export brought (its `latest` included, not merely the first version copied),
   * else only tags the target lacks (a tag the target set itself is its own decision).
   */
  const tags = async (job: ExportJob, name: string, sourceTags: Record<string, string>, brought: boolean) => {
    await store.transaction(async (tx) => {
      await store.lockPackage(tx, job.target, name);
      const pkg = await store.findPackage(job.target, name, tx);
      if (!pkg) return;
      const versions = new Set((await store.versions(job.target, name, tx)).map((v) => v.version));
      const next = { ...pkg.distTags };
      // Tags are names from clients: looked up among the object's own keys only.
      for (const [tag, v] of Object.entries(sourceTags)) if (versions.has(v) && (brought || !Object.hasOwn(next, tag))) next[tag] = v;
      if (Object.entries(next).some(([t, v]) => !Object.hasOwn(pkg.distTags, t) || pkg.distTags[t] !== v)) await store.touch(tx, job.target, name, next);
    });
  };

  const hosted: NpmPackages = {
    reads: () => true,
    names: (repository, after, limit) => store.packageNames(repository, after, limit),
    async read(repository, name) {
      const pkg = await store.findPackage(repository, name);
      return pkg ? { distTags: pkg.distTags, versions: await store.versions(repository, name) } : undefined;
    },
  };

  return {
    async copy(job) {
      const source = deps.proxied?.reads(job.source) ? deps.proxied : hosted;
      let after: string | undefined;
      for (;;) {
        const names = await source.names(job.source, after, EXPORT_PAGE);
        for (const name of names) {
          const pkg = await source.read(job.source, name);
          if (!pkg) continue;
          const versions = job.selects ? pkg.versions.filter((v) => job.selects!(v.tarball)) : pkg.versions;
          if (versions.length === 0) continue;
          const targetHad = (await store.findPackage(job.target, name)) !== undefined;
          for (const v of versions) {
            if (job.signal.aborted) return;
            const out = await version(job, name, v);
            if (out.kind === "refused") job.tally.refused(v.tarball, out.reason);
            else job.tally[out.kind](v.tarball);
          }
          await tags(job, name, pkg.distTags, !targetHad);
        }
        if (names.length < EXPORT_PAGE) return;
        after = names[names.length - 1];
      }
    },
  };
}
