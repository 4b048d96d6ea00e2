import { createHash, type Hash } from "node:crypto";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ServiceError, conflict, forbidden, invalid, type Actor } from "@svc/contracts";
import type { BlobStore } from "@svc/blobs";
import type { ArtifactKey, Digests, MavenStore } from "./maven-store.js";
import type { Db, MetadataStore } from "../../store/metadata-store.js";
import { READ_ONLY, type Address, type ArtifactService, type PublishChecks, type Published } from "../../domain/artifact-service.js";
import { HEX_LENGTH, groupPath, isSnapshot, parseMavenPath, type ChecksumAlgorithm, type MavenFile } from "./maven-layout.js";
import { pluginGroupProblem } from "./maven-group-metadata.js";
import { artifactMetadata, snapshotMetadata } from "./maven-metadata.js";

export interface MavenRepositoryDeps {
  store: MavenStore;
  artifacts: Pick<ArtifactService, "publish" | "remove">;
  metadata: Pick<MetadataStore, "find" | "browse">;
  blobs: Pick<BlobStore, "get">;
  readOnly: boolean;
}

/** Hashes what passes with the digests Maven asks for besides SHA-256 (which the store computes). */
function hashing(): { stream: Transform; digests: (sha256: string) => Digests } {
  const h: Record<"sha1" | "md5" | "sha512", Hash> = { sha1: createHash("sha1"), md5: createHash("md5"), sha512: createHash("sha512") };
  const stream = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      h.sha1.update(chunk);
      h.md5.update(chunk);
      h.sha512.update(chunk);
      cb(null, chunk);
    },
  });
  return { stream, digests: (sha256) => ({ sha256, sha1: h.sha1.digest("hex"), md5: h.md5.digest("hex"), sha512: h.sha512.digest("hex") }) };
}

const digestsOfText = (text: string): Digests => {
  const d = (algo: string) => createHash(algo).update(text, "utf8").digest("hex");
  return { sha1: d("sha1"), md5: d("md5"), sha256: d("sha256"), sha512: d("sha512") };
};

const keyOf = (repository: string, f: Pick<MavenFile, "groupId" | "artifactId">): ArtifactKey => ({ repository, groupId: f.groupId, artifactId: f.artifactId });

type RowsStore = Pick<MavenStore, "lockArtifact" | "recordVersion" | "recordSnapshot">;

/**
 * The rows a file of a version adds, in the transaction that records the file, under its path's
 * lock then the artifact's (the removal's order): its version in the artifact's
 * maven-metadata.xml and, for a timestamped snapshot file, its build in the version's.
 */
async function recordFileRows(store: RowsStore, tx: Db, repository: string, f: MavenFile, at: Date): Promise<void> {
  const k = keyOf(repository, f);
  await store.lockArtifact(tx, k);
  await store.recordVersion(tx, k, f.version, at);
  if (f.snapshot) await store.recordSnapshot(tx, k, f.version, { classifier: f.classifier, extension: f.extension, ...f.snapshot }, at);
}

/**
 * The artifact service's `indexing` step for a maven repository: when the walker's backfill or
 * repair indexes a file (one a deploy that crashed before its commit left in the store), the
 * rows that deploy would have recorded commit with its artifact row, dated by the file's
 * modification time (so a version found late is listed where it was deployed, not as the
 * latest). Checksum files and maven-metadata.xml documents are not files of a version.
 */
export function mavenFileIndexing(deps: { store: RowsStore & Partial<Pick<MavenStore, "versions" | "snapshots">> }) {
  /** Whether the file's rows are there already (a backfill then has nothing to do); false when the store cannot say. */
  const present = async (tx: Db, k: ArtifactKey, f: MavenFile): Promise<boolean> => {
    const { versions, snapshots } = deps.store;
    if (!versions || !snapshots) return false;
    if (!(await versions(k, tx)).some((v) => v.version === f.version)) return false;
    return !f.snapshot || (await snapshots(k, f.version, tx)).some((b) => b.classifier === f.classifier && b.extension === f.extension && b.value === f.snapshot!.value);
  };
  /** True when it recorded rows. */
  return async (tx: Db, a: Address, at: Date): Promise<boolean> => {
    const f = parseMavenPath(a.segments);
    if (f.kind !== "file" || (await present(tx, keyOf(a.repository, f), f))) return false;
    await recordFileRows(deps.store, tx, a.repository, f, at);
    return true;
  };
}

/**
 * The artifact service's `removing` step for a maven repository, in the transaction that forgets
 * a file's row and under its path's lock (then the artifact's, the order a deploy takes them
 * in): a timestamped file's snapshot build leaves the version's maven-metadata.xml, and a version
 * whose folder holds no file any more leaves the artifact's. Whatever removes the file (a
 * DELETE, retention, repair, a forced repository removal), Maven is never offered a file that
 * answers 404. Both documents are written from these rows on each read, so nothing else is stale.
 */
export function mavenFileRemoval(deps: { store: Pick<MavenStore, "lockArtifact" | "forgetSnapshot" | "forgetVersion">; metadata: Pick<MetadataStore, "browse"> }) {
  return async (tx: Db, a: Address): Promise<void> => {
    const f = parseMavenPath(a.segments);
    if (f.kind !== "file") return;
    const k = keyOf(a.repository, f);
    await deps.store.lockArtifact(tx, k);
    if (f.snapshot) await deps.store.forgetSnapshot(tx, k, f.version, { classifier: f.classifier, extension: f.extension, value: f.snapshot.value });
    // In the transaction: outside it the row this removal deletes is still there.
    const folder = `${groupPath(f.groupId)}/${f.artifactId}/${f.version}/`;
    if ((await deps.metadata.browse(a.repository, { prefix: folder, limit: 1 }, tx)).length === 0) await deps.store.forgetVersion(tx, k, f.version);
  };
}

/**
 * A `maven` repository in the Maven 2 layout. Files are artifacts (stored once by digest, with
 * their events); the `maven-metadata.xml` documents and every checksum are the server's own,
 * written from rows that each deploy adds under its artifact's lock, so concurrent deploys of
 * different versions all land. Clients' uploads of metadata are accepted and not kept; their
 * checksum uploads are checked against the file and refused when they do not match.
 */
export function mavenRepositoryFactory(deps: MavenRepositoryDeps) {
  const { store } = deps;
  const writable = () => {
    if (deps.readOnly) throw forbidden(READ_ONLY);
  };

  /** The server's document for `maven-metadata.xml` in folder `dir`, or undefined when it writes none there. */
  const metadataAt = async (repository: string, dir: readonly string[]): Promise<string | undefined> => {
    if (dir.length >= 2) {
      const k = { repository, groupId: dir.slice(0, -1).join("."), artifactId: dir[dir.length - 1]! };
      const [all, held] = await Promise.all([store.versions(k), store.heldVersions(k)]);
      const versions = all.filter((v) => !held.has(v.version));
      if (versions.length > 0) return artifactMetadata(k.groupId, k.artifactId, versions);
    }
    if (dir.length >= 3 && isSnapshot(dir[dir.length - 1]!)) {
      const version = dir[dir.length - 1]!;
      const k = { repository, groupId: dir.slice(0, -2).join("."), artifactId: dir[dir.length - 2]! };
      const builds = await store.snapshots(k, version);
      if (builds.length > 0) return snapshotMetadata(k.groupId, k.artifactId, version, builds);
    }
    return undefined;
  };

  /** The digests of a stored file (computed from the file once when it arrived before they were kept). */
  const storedDigests = async (repository: string, segments: string[]): Promise<Digests | undefined> => {
    const row = await deps.metadata.find(repository, segments.join("/"));
    if (!row) return undefined;
    const known = await store.digests(row.sha256);
    if (known) return known;
    const blob = await deps.blobs.get(row.sha256);
    if (!blob) return undefined;
    const h = hashing();
    await pipeline(blob, h.stream, async function* (source) {
      for await (const _ of source) void _;
    });
    const computed = h.digests(row.sha256);
    await store.recordDigests(computed);
    return computed;
  };

  return {
    metadataAt,

    /** The checksum of a file or of a metadata document the server writes; undefined when there is neither. */
    async checksumOf(repository: string, of: string[], algorithm: ChecksumAlgorithm): Promise<string | undefined> {
      const doc = of[of.length - 1] === "maven-metadata.xml" ? await metadataAt(repository, of.slice(0, -1)) : undefined;
      const d = doc !== undefined ? digestsOfText(doc) : await storedDigests(repository, of);
      return d?.[algorithm];
    },

    /**
     * A file of a version. A release's files are deployed once unless the repository allows
     * redeploys (409 otherwise); a snapshot's may always be deployed again.
     */
    async deploy(a: Address, body: Readable, contentType: string | null, actor: Actor, checks: PublishChecks = {}): Promise<Published> {
      writable();
      const f = parseMavenPath(a.segments);
      if (f.kind !== "file") {
        throw invalid("path", `${a.path} is not a file of the Maven 2 layout: <group as folders>/<artifactId>/<version>/<artifactId>-<version>[-<classifier>].<extension>`);
      }
      const guarded = !isSnapshot(f.version) && !(await store.releaseRedeploy(a.repository));
      const h = hashing();
      const source = body.pipe(h.stream);
      body.once("error", (err) => h.stream.destroy(err));
      const preconditions = guarded ? { ...checks.preconditions, ifNoneMatch: "*" as const } : checks.preconditions;
      // The version and build rows commit with the file: a removal of this path can never leave them behind.
      const rows = (tx: Db) => recordFileRows(store, tx, a.repository, f, new Date());
      const published = await deps.artifacts.publish(a, source, contentType, actor, { ...checks, ...(preconditions ? { preconditions } : {}) }, { run: rows }).catch((err: unknown) => {
        if (guarded && err instanceof ServiceError && err.code === "precondition_failed" && checks.preconditions?.ifNoneMatch === undefined) {
          throw conflict(`${f.file} of release ${f.groupId}:${f.artifactId}:${f.version} is deployed already: a release is deployed once (a repository may allow redeploys, see releaseRedeploy)`);
        }
        throw err;
      });
      await store.recordDigests(h.digests(published.sha256));
      return published;
    },

    /** A client's upload of a checksum file: checked against the file (or taken as is for metadata the server writes). */
    async checksum(repository: string, of: string[], algorithm: ChecksumAlgorithm, sent: string): Promise<void> {
      writable();
      const hex = sent.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
      if (!new RegExp(`^[0-9a-f]{${HEX_LENGTH[algorithm]}}$`).test(hex)) {
        throw invalid("body", `a .${algorithm} file holds the ${algorithm.toUpperCase()} of its file in hexadecimal (${HEX_LENGTH[algorithm]} digits)`);
      }
      const name = of.join("/");
      if (of[of.length - 1] === "maven-metadata.xml" && (await metadataAt(repository, of.slice(0, -1))) !== undefined) return;
      const d = await storedDigests(repository, of);
      if (!d) throw conflict(`there is no ${name} to check this ${algorithm.toUpperCase()} against: deploy the file first`);
      if (d[algorithm] !== hex) throw invalid("body", `the ${algorithm.toUpperCase()} sent (${hex}) does not match ${of[of.length - 1]} as stored (${d[algorithm]}): checksum refused`);
    },

    /**
     * A client's `maven-metadata.xml`: the server writes the artifact and snapshot documents
     * itself, so those are not kept; a group's plugin list (what a plugin deploy sends) is kept as a
     * file, and only when it is exactly that (maven-group-metadata.ts): its bytes are served back.
     */
    async metadata(a: Address, dir: string[], text: string, actor: Actor): Promise<"kept" | "ignored"> {
      writable();
      if ((await metadataAt(a.repository, dir)) !== undefined) return "ignored";
      if (/<plugins[\s>]/.test(text)) {
        const problem = pluginGroupProblem(text);
        if (problem !== undefined) throw invalid("body", `${a.path} is refused: a group's maven-metadata.xml is its plugin list (<metadata><plugins><plugin> with <name>, <prefix>, <artifactId>) and nothing else, but ${problem}`);
        await deps.artifacts.publish(a, Buffer.from(text, "utf8"), "application/xml", actor);
        return "kept";
      }
      throw conflict(`nothing is deployed under ${dir.join("/")}: deploy the files before their maven-metadata.xml`);
    },

    /** Removes a file (its rows go with it: mavenFileRemoval). False when there was none. */
    async remove(a: Address, actor: Actor): Promise<boolean> {
      writable();
      return deps.artifacts.remove(a, actor);
    },

    async releaseRedeploy(repository: string): Promise<boolean> {
      return store.releaseRedeploy(repository);
    },
    async setReleaseRedeploy(repository: string, allowed: boolean): Promise<void> {
      await store.setReleaseRedeploy(repository, allowed);
    },
  };
}
export type MavenRepository = ReturnType<typeof mavenRepositoryFactory>;
