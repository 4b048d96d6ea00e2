import { Readable, Transform } from "node:stream";
import { ServiceError, conflict, forbidden, invalid, type Actor } from "@svc/contracts";
import type { BlobStore } from "@svc/blobs";
import { READ_ONLY, type Address, type ArtifactService, type LateDestination, type PublishChecks, type Published } from "../../domain/artifact-service.js";
import { isIncompatible, isPseudoVersion, latestOf, parseGoPath, versionError } from "./go-module.js";
import { MAX_ZIP_FILE, checkModuleZip, moduleOfGoMod } from "./go-zip.js";
import type { GoStore, GoVersionRow } from "./go-store.js";
import type { Db, MetadataStore } from "../../store/metadata-store.js";

export interface GoRegistryDeps {
  store: GoStore;
  artifacts: Pick<ArtifactService, "publish">;
  metadata: Pick<MetadataStore, "find">;
  blobs: Pick<BlobStore, "get">;
  readOnly: boolean;
}

const tooLarge = () => new ServiceError("payload_too_large", `module zip file is too large (limit is ${MAX_ZIP_FILE} bytes, as the go command's)`);

/** The same zip uploaded again: nothing changes (a publish's step throws it to store nothing, and the upload answers 200). */
class Unchanged extends Error {}

/** A blob's bytes from `start` to `end` inclusive, for the zip's checks (a few reads at its end and of its go.mod). */
const rangeReader = (blobs: Pick<BlobStore, "get">, sha256: string) => async (start: number, end: number): Promise<Buffer> => {
  const s = await blobs.get(sha256, { start, end });
  if (!s) throw new Error(`the blob ${sha256} staged for a module zip is missing`);
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

/**
 * Go modules' writes and reads (docs/integration/go.md): an upload of a module version's zip,
 * checked as the go command checks one, its `.mod` taken from the zip's go.mod and its `.info`
 * from the upload time; the versions listed as the GOPROXY protocol serves them.
 */
export function goRegistryFactory(deps: GoRegistryDeps) {
  const { store } = deps;

  /** A version's zip (stored as `blob`) checked as the go command checks one: the go.mod `.mod` serves. */
  const goModOf = async (blob: { sha256: string; size: number }, module: string, version: string): Promise<Buffer> => {
    const checked = await checkModuleZip(rangeReader(deps.blobs, blob.sha256), blob.size, module, version);
    const goMod = checked.goMod;
    if (goMod === undefined) {
      // Only a +incompatible version (a major version 2 or later from before modules) has none; the go command serves one naming the module.
      if (!isIncompatible(version)) throw invalid("zip", `the zip has no go.mod at its root (${module}@${version}/go.mod): a module version needs one, declaring module ${module}`);
      return Buffer.from(`module ${module}\n`);
    }
    if (isIncompatible(version)) throw invalid("zip", `${module}@${version}: a +incompatible version has no go.mod; a module with a go.mod at major version 2 or later has the path suffix /vN`);
    const declared = moduleOfGoMod(goMod.toString("utf8"));
    if (declared === undefined) throw invalid("zip", `the zip's go.mod declares no module path (a "module ${module}" line)`);
    if (declared !== module) throw invalid("zip", `the zip's go.mod declares module ${declared}, not ${module}, the module it is uploaded as`);
    return goMod;
  };

  /**
   * The version row an upload would have added for a zip the index holds (a walk's backfill, a
   * restore that lost go_versions), uploaded at `at`; false when there was nothing to add: the
   * row is there, the path is no version's zip, or the zip is not one the upload would take.
   */
  const indexing = async (tx: Db, a: Address, at: Date): Promise<boolean> => {
    const req = parseGoPath(a.path);
    if (req?.kind !== "zip" || versionError(req.module, req.version)) return false;
    const file = await deps.metadata.find(a.repository, a.path, tx);
    if (!file) return false;
    const there = await store.lock(tx, a.repository, req.module, req.version);
    if (there) {
      // Removed while its zip is back (a restore of the index): served again, if it is the same zip.
      if (!there.removed || there.sha256 !== file.sha256) return false;
      await store.restore(tx, a.repository, req.module, req.version);
      return true;
    }
    let goMod: Buffer;
    try {
      goMod = await goModOf(file, req.module, req.version);
    } catch (err) {
      if (err instanceof ServiceError) return false;
      throw err;
    }
    return store.insert(tx, a.repository, { module: req.module, version: req.version, path: a.path, sha256: file.sha256, size: file.size, goMod, uploaded: at });
  };

  /**
   * A PUT of `<module>/@v/<version>.zip` (the address checked by the handler): the zip streamed
   * into the store (at most 500 MiB), checked, and recorded with its version row in one
   * transaction. The same zip again answers as done; another zip under a published version is
   * refused (409), also after the version was removed.
   */
  const publish = async (a: Address | LateDestination, body: Readable | Buffer, _contentType: string | null, actor: Actor, checks: PublishChecks = {}): Promise<Published> => {
    if (deps.readOnly) throw forbidden(READ_ONLY);
    if (typeof a === "function") throw new Error("a Go module zip is published to its own address");
    const req = parseGoPath(a.path);
    if (req?.kind !== "zip") throw invalid("path", "upload a module version's zip to <module>/@v/<version>.zip");
    const { module, version } = req;
    const wrong = versionError(module, version);
    if (wrong) throw invalid("version", wrong);
    let seen = 0;
    const source = Buffer.isBuffer(body) ? Readable.from([body]) : body;
    const limited = source.pipe(
      new Transform({
        transform(chunk: Buffer, _enc, cb) {
          seen += chunk.length;
          cb(seen > MAX_ZIP_FILE ? tooLarge() : null, chunk);
        },
      }),
    );
    source.on("error", (err) => limited.destroy(err));
    let unchanged: { size: number; sha256: string } | undefined;
    try {
      return await deps.artifacts.publish(
        async (staged) => {
          const goMod = await goModOf(staged, module, version);
          const row = { module, version, path: a.path, sha256: staged.sha256, size: staged.size, goMod };
          return {
            address: a,
            alongside: {
              run: async (tx) => {
                // The path's lock (the artifact service's) already keeps two uploads of one version apart.
                let taken = await store.lock(tx, a.repository, module, version);
                if (!taken) {
                  if (await store.insert(tx, a.repository, row)) return;
                  taken = await store.lock(tx, a.repository, module, version);
                  if (!taken) throw conflict(`${module}@${version} is being uploaded at the same time: try again`);
                }
                if (taken.sha256 !== staged.sha256) {
                  throw conflict(`${module}@${version} is already published with other content, and a published version never changes (the go command's checksums depend on it): upload a new version`);
                }
                if (taken.removed) return store.restore(tx, a.repository, module, version);
                unchanged = staged;
                throw new Unchanged();
              },
            },
          };
        },
        limited,
        "application/zip",
        actor,
        checks,
      );
    } catch (err) {
      if (err instanceof Unchanged && unchanged) return { ...unchanged, created: false, etag: undefined };
      throw err;
    }
  };

  return {
    publish,
    indexing,

    /** A module's versions as `@v/list` serves them: neither held nor pseudo-versions. */
    async listed(repository: string, module: string): Promise<string[]> {
      const rows = await store.versions(repository, module);
      return rows.filter((r) => r.held === null && !isPseudoVersion(r.version)).map((r) => r.version);
    },

    /** What `@latest` answers: the newest version served (pseudo-versions only when there is nothing else). */
    async latest(repository: string, module: string): Promise<GoVersionRow | undefined> {
      const rows = (await store.versions(repository, module)).filter((r) => r.held === null);
      const tagged = rows.filter((r) => !isPseudoVersion(r.version));
      const pick = latestOf((tagged.length > 0 ? tagged : rows).map((r) => r.version));
      return rows.find((r) => r.version === pick);
    },

    /** A version served (not removed), held or not; undefined for one this repository does not have. */
    async version(repository: string, module: string, version: string): Promise<GoVersionRow | undefined> {
      if (versionError(module, version) !== undefined) return undefined;
      const row = await store.find(repository, module, version);
      return row && row.removed === null ? row : undefined;
    },

    goMod: (repository: string, module: string, version: string) => store.goMod(repository, module, version),
  };
}
export type GoRegistry = ReturnType<typeof goRegistryFactory>;
