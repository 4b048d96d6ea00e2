import type { Readable } from "node:stream";
import { ServiceError, conflict, forbidden, invalid, notFound, type Actor } from "@svc/contracts";
import type { MetadataStore } from "../../store/metadata-store.js";
import type { NpmStore, NpmVersionRow } from "./npm-store.js";
import type { Db } from "../../store/metadata-store.js";
import { READ_ONLY, type Address, type ArtifactService } from "../../domain/artifact-service.js";
import { readNpmDocument, type IncomingTarball, type ReadDocument, type TarballDigests } from "./npm-document-reader.js";
import { README_CHARS, npmCoordinates, tarballPath } from "./npm-documents.js";

export interface NpmRegistryDeps {
  store: NpmStore;
  metadata: Pick<MetadataStore, "holdRepositoryOpen">;
  artifacts: Pick<ArtifactService, "publish" | "remove">;
  readOnly: boolean;
}

type Doc = Record<string, unknown>;

/** semver 2.0.0, as npm requires of a published version. */
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
/** A dist-tag: not something that reads as a version or a range. */
const TAG = /^[A-Za-z][\w.-]{0,63}$/;
/**
 * Names every object has (`constructor`, `hasOwnProperty`, `__proto__`…): never a dist-tag,
 * which clients look up in plain objects.
 */
const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));
const isTag = (t: string) => TAG.test(t) && !PROTOTYPE_NAMES.has(t);

const obj = (v: unknown): Doc => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Doc) : {});
const addressOf = (repository: string, path: string) => ({ repository, segments: path.split("/"), path });

/** The digests the integrity string of a publish may name, computed as its tarball was read and stored. */
function checkDigests(manifest: Doc, tarball: TarballDigests, sha256: string): void {
  const dist = obj(manifest.dist);
  if (typeof dist.shasum === "string" && dist.shasum !== tarball.sha1) {
    throw invalid("dist.shasum", "dist.shasum does not match the tarball sent: nothing was published");
  }
  if (typeof dist.integrity !== "string") return;
  const ours: Record<string, string> = { sha512: tarball.sha512, sha256: Buffer.from(sha256, "hex").toString("base64"), sha1: Buffer.from(tarball.sha1, "hex").toString("base64") };
  // Each digest the string names of an algorithm computed here (sha384, rarely sent, is not: the
  // manifest stored names the SHA-512, which clients check what they download against).
  for (const entry of dist.integrity.split(/\s+/)) {
    const at = entry.indexOf("-");
    const algo = entry.slice(0, at);
    if (at > 0 && Object.hasOwn(ours, algo) && entry.slice(at + 1).split("?")[0] !== ours[algo]) {
      throw invalid("dist.integrity", "dist.integrity does not match the tarball sent: nothing was published");
    }
  }
}

/** The fields of `dist` kept: the digests (ours), and what npm's registry adds (counts, signatures). */
const DIST_FIELDS = ["fileCount", "unpackedSize", "signatures", "npm-signature", "attestations"];

/**
 * A version's manifest as stored: the fields clients read (the reader kept only those), its
 * readme cut as npmjs cuts it (the document's own when the version has none, as yarn sends it),
 * and the digests it declared, as computed here.
 */
function storedManifest(name: string, version: string, manifest: Doc, readme: unknown, tarball: TarballDigests): Doc {
  const { dist, readme: own, ...rest } = manifest;
  const text = typeof own === "string" ? own : typeof readme === "string" ? readme : undefined;
  const kept: Doc = {};
  for (const f of DIST_FIELDS) if (obj(dist)[f] !== undefined) kept[f] = obj(dist)[f];
  return {
    ...rest,
    name,
    version,
    _id: `${name}@${version}`,
    ...(text !== undefined ? { readme: text.slice(0, README_CHARS) } : {}),
    // The digests the client declared (checked), as computed here: an integrity string naming an
    // algorithm not computed (sha384) is not passed on unchecked.
    dist: { ...kept, ...(obj(dist).shasum !== undefined ? { shasum: tarball.sha1 } : {}), ...(obj(dist).integrity !== undefined ? { integrity: `sha512-${tarball.sha512}` } : {}) },
  };
}

/** Dist-tags left pointing only at versions still there, `latest` at the newest kept when its version went. */
function tagsOf(tags: Record<string, string>, kept: NpmVersionRow[]): Record<string, string> {
  const versions = new Set(kept.map((v) => v.version));
  const next = Object.fromEntries(Object.entries(tags).filter(([t, v]) => isTag(t) && versions.has(v)));
  if (next.latest === undefined) next.latest = kept[kept.length - 1]!.version;
  return next;
}

/**
 * The version rows of a tarball removed as a file (retention, repair, a forced repository
 * removal), in the transaction that forgets it (ArtifactService's `removing`): the version is
 * unpublished, as `npm unpublish` would, so no document offers a tarball that answers 404.
 * Under the path's lock, then the package's (a publish takes them in that order too).
 */
export function npmTarballRemoval(store: Pick<NpmStore, "lockPackage" | "findPackage" | "findVersion" | "versions" | "deleteVersion" | "markUnpublished" | "deletePackage" | "touch">) {
  return async (tx: Db, a: Address): Promise<void> => {
    const c = npmCoordinates(a.path);
    if (!c?.version) return;
    await store.lockPackage(tx, a.repository, c.name);
    const v = await store.findVersion(a.repository, c.name, c.version, tx);
    if (v?.tarball !== a.path) return;
    await store.deleteVersion(tx, a.repository, c.name, v.version);
    await store.markUnpublished(tx, a.repository, c.name, [v.version]);
    const kept = await store.versions(a.repository, c.name, tx);
    const pkg = await store.findPackage(a.repository, c.name, tx);
    if (kept.length === 0) await store.deletePackage(tx, a.repository, c.name);
    else if (pkg) await store.touch(tx, a.repository, c.name, tagsOf(pkg.distTags, kept));
  };
}

/**
 * A tarball held or released (the screening gate, an administrator), in that transaction: the
 * package's revision moves, so its documents are built again without (or with) the version.
 */
export function npmTarballHolding(store: Pick<NpmStore, "lockPackage" | "touch">) {
  return async (tx: Db, a: Address): Promise<void> => {
    const c = npmCoordinates(a.path);
    if (!c?.version) return;
    await store.lockPackage(tx, a.repository, c.name);
    await store.touch(tx, a.repository, c.name);
  };
}

/** npmjs's rule: a version number once unpublished is never used again (its tarball could be cached anywhere). */
const unpublished = (name: string, version: string) =>
  conflict(`cannot publish ${name}@${version}: that version was unpublished, and a version number is never used twice. Publish a new version`);

/**
 * npm's writes: publish, document edits (deprecate, unpublish of versions), whole-package
 * unpublish and dist-tags. Versions are rows, so a publish adds its row under the package's
 * lock and never rewrites what another publish wrote; a published version is immutable (but for
 * its deprecation message). Tarballs are artifacts (stored once by digest, with their events).
 */
export function npmRegistryFactory(deps: NpmRegistryDeps) {
  const { store } = deps;
  const writable = () => {
    if (deps.readOnly) throw forbidden(READ_ONLY);
  };
  /** Package changes that record tombstones (rows of the repository) hold it open: none lands in one being removed. */
  const holdOpen = async (tx: Parameters<MetadataStore["holdRepositoryOpen"]>[0], repository: string) => {
    if (!(await deps.metadata.holdRepositoryOpen(tx, repository))) throw notFound(`no repository named ${repository}`);
  };
  const removeTarballs = async (repository: string, gone: NpmVersionRow[], actor: Actor) => {
    for (const v of gone) await deps.artifacts.remove(addressOf(repository, v.tarball), actor);
  };

  /** A publish's tarball to the store as it is read; its version and rows once the whole document is. */
  const publishFrom = async (repository: string, name: string, tarball: IncomingTarball, document: () => Promise<ReadDocument>, actor: Actor): Promise<void> => {
    await deps.artifacts.publish(
      async (staged) => {
        const { document: body, tarball: digests } = await document();
        if (!digests || digests.size === 0) throw invalid("_attachments", "the tarball in _attachments has no base64 data");
        if (body.name !== undefined && body.name !== name) throw invalid("name", `the document names package ${String(body.name)} but was sent to ${name}`);
        if (Object.keys(obj(body._attachments)).length !== 1) throw invalid("_attachments", "a publish carries exactly one tarball in _attachments");
        const entries = Object.entries(obj(body.versions));
        if (entries.length !== 1) throw invalid("versions", "a publish carries exactly one version");
        const [version, sent] = entries[0]!;
        if (!SEMVER.test(version)) throw invalid("version", `${version} is not a valid semver version`);
        const manifest = obj(sent);
        if (manifest.name !== undefined && manifest.name !== name) throw invalid("name", `version ${version} names package ${String(manifest.name)}, not ${name}`);
        checkDigests(manifest, digests, staged.sha256);
        const published = () => conflict(`cannot publish over the previously published version ${version} of ${name}: published versions are immutable`);
        const path = tarballPath(name, version);
        const stored = storedManifest(name, version, manifest, body.readme, digests);
        const tags = Object.fromEntries(Object.entries(obj(body["dist-tags"])).filter(([t, v]) => isTag(t) && v === version)) as Record<string, string>;
        // The tarball and the version's rows commit in one transaction: a publish is all there or
        // not at all. The version's row says whether it is published, not the tarball's file: a
        // file without its row is what a publish cut short by a crash left, and is replaced.
        return {
          address: addressOf(repository, path),
          alongside: {
            locks: [store.packageLock(repository, name)],
            withBegin: [store.addVersionStatement({ repository, name, version, manifest: stored, tarball: path, tags })],
            run: async (tx, _staged, [added = []]) => {
              if (added.length > 0) return;
              throw (await store.wasUnpublished(repository, name, version, tx)) ? unpublished(name, version) : published();
            },
          },
        };
      },
      tarball.content,
      "application/octet-stream",
      actor,
    );
  };

  /**
   * PUT /<name> without an attachment (or /<name>/-rev/<rev>): the client sends the document
   * back edited. Versions left out are unpublished, a changed `deprecated` is recorded, and
   * the dist-tags are replaced; any other change to a published version is ignored.
   */
  const edit = async (repository: string, name: string, body: Doc, actor: Actor): Promise<void> => {
    const sent = obj(body.versions);
    const gone = await store.transaction(async (tx) => {
      await holdOpen(tx, repository);
      await store.lockPackage(tx, repository, name);
      const pkg = await store.findPackage(repository, name, tx);
      if (!pkg) throw notFound(`no package ${name} in repository ${repository}`);
      const current = await store.versions(repository, name, tx);
      const removed = current.filter((v) => !Object.hasOwn(sent, v.version));
      const kept = current.filter((v) => Object.hasOwn(sent, v.version));
      for (const v of kept) {
        const deprecated = obj(sent[v.version]).deprecated;
        const now = typeof deprecated === "string" && deprecated !== "" ? deprecated : undefined;
        if (now === v.manifest.deprecated) continue;
        const { deprecated: _old, ...manifest } = v.manifest;
        await store.setManifest(tx, repository, name, v.version, now === undefined ? manifest : { ...manifest, deprecated: now });
      }
      for (const v of removed) await store.deleteVersion(tx, repository, name, v.version);
      await store.markUnpublished(tx, repository, name, removed.map((v) => v.version));
      if (kept.length === 0) {
        await store.deletePackage(tx, repository, name);
        return removed;
      }
      const tags = body["dist-tags"] === undefined ? pkg.distTags : (obj(body["dist-tags"]) as Record<string, string>);
      await store.touch(tx, repository, name, tagsOf(tags, kept));
      return removed;
    });
    await removeTarballs(repository, gone, actor);
  };

  return {
    /**
     * PUT /<name> (or /<name>/-rev/<rev>, never a publish): a publish when the document carries
     * a tarball, else an edit. The tarball streams out of the document to the store as it is
     * read (memory stays flat whatever its size); its version is known once the document is.
     */
    async put(repository: string, name: string, body: Readable, actor: Actor, opts: { publish: boolean }): Promise<"published" | "edited"> {
      writable();
      let publishing: Promise<void> | undefined;
      const reading: Promise<ReadDocument> = readNpmDocument(body, {
        ...(opts.publish
          ? {
              onTarball: (tarball) => {
                publishing = publishFrom(repository, name, tarball, () => reading, actor);
                // Awaited below; never unhandled before that.
                publishing.catch(() => {});
              },
            }
          : {}),
      });
      let read: ReadDocument;
      try {
        read = await reading;
      } catch (err) {
        // The store's failure (it stopped reading the tarball) is the cause, unless the document was refused.
        const failed = await publishing?.then(() => undefined, (e: unknown) => e);
        throw err instanceof ServiceError || failed === undefined ? err : failed;
      }
      if (publishing) {
        await publishing;
        return "published";
      }
      if (opts.publish && Object.keys(obj(read.document._attachments)).length > 0) throw invalid("_attachments", "the tarball in _attachments has no base64 data");
      await edit(repository, name, read.document, actor);
      return "edited";
    },

    /** DELETE /<name>/-rev/<rev>: every version, its tarball and the package. False when there was none. */
    async unpublish(repository: string, name: string, actor: Actor): Promise<boolean> {
      writable();
      const gone = await store.transaction(async (tx) => {
        await holdOpen(tx, repository);
        await store.lockPackage(tx, repository, name);
        if (!(await store.findPackage(repository, name, tx))) return undefined;
        const versions = await store.versions(repository, name, tx);
        await store.deletePackage(tx, repository, name);
        await store.markUnpublished(tx, repository, name, versions.map((v) => v.version));
        return versions;
      });
      if (!gone) return false;
      await removeTarballs(repository, gone, actor);
      return true;
    },

    /** `npm dist-tag add`: points a tag at a published version. */
    async setTag(repository: string, name: string, tag: string, version: unknown): Promise<Record<string, string>> {
      writable();
      if (!isTag(tag)) throw invalid("tag", `${tag} is not a valid dist-tag (a letter, then letters, digits, '.', '_' or '-')`);
      if (typeof version !== "string") throw invalid("body", 'the body is the version the tag points at, as a JSON string ("1.2.3")');
      return store.transaction(async (tx) => {
        await store.lockPackage(tx, repository, name);
        const pkg = await store.findPackage(repository, name, tx);
        if (!pkg) throw notFound(`no package ${name} in repository ${repository}`);
        if (!(await store.versions(repository, name, tx)).some((v) => v.version === version)) throw notFound(`${name} has no version ${version}`);
        const next = { ...pkg.distTags, [tag]: version };
        await store.touch(tx, repository, name, next);
        return next;
      });
    },

    /** `npm dist-tag rm`: `latest` stays (every package has one). */
    async removeTag(repository: string, name: string, tag: string): Promise<Record<string, string>> {
      writable();
      if (tag === "latest") throw invalid("tag", "the latest tag cannot be removed: point it at another version instead");
      return store.transaction(async (tx) => {
        await store.lockPackage(tx, repository, name);
        const pkg = await store.findPackage(repository, name, tx);
        if (!pkg) throw notFound(`no package ${name} in repository ${repository}`);
        if (!Object.hasOwn(pkg.distTags, tag)) throw notFound(`${name} has no dist-tag ${tag}`);
        const { [tag]: _gone, ...next } = pkg.distTags;
        await store.touch(tx, repository, name, next);
        return next;
      });
    },
  };
}
export type NpmRegistry = ReturnType<typeof npmRegistryFactory>;
