import type { Readable } from "node:stream";
import { ServiceError, forbidden, invalid, notFound, type Actor } from "@svc/contracts";
import type { PypiStore } from "./pypi-store.js";
import { READ_ONLY, type ArtifactService } from "../../domain/artifact-service.js";
import { filePath, isProjectName, isVersion, normalizeProject, projectOfFile, sameVersion, versionOfWheel } from "./pypi-index.js";
import type { DeclaredDigests } from "../../domain/upload-checks.js";

export interface PypiRegistryDeps {
  store: Pick<PypiStore, "findFile" | "insertFile" | "setYanked">;
  artifacts: Pick<ArtifactService, "publish" | "remove">;
  readOnly: boolean;
}

/** The fields of twine's `file_upload` form this server reads (the rest of the metadata is not kept). */
export interface UploadFields {
  name?: string;
  version?: string;
  sha256_digest?: string;
  md5_digest?: string;
  blake2_256_digest?: string;
  requires_python?: string;
}

/** A form whose fields passed: what the file is checked against and indexed under. */
export interface CheckedUpload {
  name: string;
  version: string;
  project: string;
  filename: string;
  digests: DeclaredDigests;
  sha256: string | undefined;
  requiresPython: string | null;
  /** An export's copy keeps the source's PEP 592 state and upload time; a client's upload: not yanked, uploaded now. */
  yanked?: string | null;
  uploaded?: Date;
}

export interface Uploaded {
  filename: string;
  project: string;
  version: string;
  sha256: string;
  /** false: the same file (same name, same SHA-256) was there already; nothing changed. */
  created: boolean;
}

/** What PyPI answers (twine prints it) when a file name is taken by other content: file names are never reused. */
export const FILE_EXISTS = "File already exists: a file of that name with other content was uploaded before, and file names are never reused; give the release a new version";

const hex = (v: string | undefined, length: number, field: string): string | undefined => {
  if (v === undefined || v === "") return undefined;
  const h = v.trim().toLowerCase();
  if (!new RegExp(`^[0-9a-f]{${length}}$`).test(h)) throw invalid(field, `${field} must be ${length} hexadecimal digits`);
  return h;
};

/**
 * PyPI's writes: uploads (a file streamed into the store as an artifact, checked against the
 * digests the form declares, then indexed), yanking (PEP 592) and removal. A file name, once
 * taken, keeps its content, as on PyPI.
 */
export function pypiRegistryFactory(deps: PypiRegistryDeps) {
  const { store } = deps;
  const writable = () => {
    if (deps.readOnly) throw forbidden(READ_ONLY);
  };

  return {
    writable,

    /** Checks the form's fields before the file is read: what a refusal can say without storing anything. */
    check(fields: UploadFields, filename: string): CheckedUpload {
      writable();
      const name = fields.name?.trim() ?? "";
      const version = fields.version?.trim() ?? "";
      if (!isProjectName(name)) throw invalid("name", name === "" ? "the form has no name field (the project name): send the metadata fields before the content file" : `${name} is not a valid project name`);
      if (!isVersion(version)) throw invalid("version", version === "" ? "the form has no version field" : `${version} is not a valid version`);
      const project = normalizeProject(name);
      const owner = projectOfFile(filename, version);
      if (owner === undefined) throw invalid("content", `${filename} is not a wheel (.whl) or sdist (.tar.gz, .zip) file name of version ${version}`);
      if (owner !== project) throw invalid("content", `${filename} belongs to project ${owner}, not ${project}`);
      // A wheel's name carries its version as an sdist's does (projectOfFile checks that one): as PyPI, the same under PEP 440.
      const named = versionOfWheel(filename);
      if (named !== undefined && !sameVersion(named, version)) throw invalid("content", `Version in filename should be '${version}' not '${named}'.`);
      const digests: DeclaredDigests = {};
      const sha256 = hex(fields.sha256_digest, 64, "sha256_digest");
      const md5 = hex(fields.md5_digest, 32, "md5_digest");
      const blake2 = hex(fields.blake2_256_digest, 64, "blake2_256_digest");
      // Every digest the form declares is checked against the bytes stored, as PyPI does.
      if (sha256) digests.sha256 = [{ hex: sha256, header: "sha256_digest" }];
      if (md5) digests.md5 = [{ hex: md5, header: "md5_digest" }];
      if (blake2) digests.blake2_256 = [{ hex: blake2, header: "blake2_256_digest" }];
      if (!sha256 && !md5 && !blake2) throw invalid("sha256_digest", "the form declares no digest of the file: send sha256_digest (or md5_digest, blake2_256_digest)");
      const requiresPython = fields.requires_python?.trim() || null;
      if (requiresPython !== null && requiresPython.length > 255) throw invalid("requires_python", "requires_python is longer than 255 characters");
      return { name, version, project, filename, digests, sha256, requiresPython };
    },

    /**
     * Stores the file of a checked form. The same file again (same name and declared SHA-256) is
     * answered as done without reading it; another content under a taken name is refused (400).
     */
    async upload(repository: string, checked: CheckedUpload, file: Readable, actor: Actor): Promise<Uploaded> {
      writable();
      const { project, version, filename } = checked;
      const done = (sha256: string, created: boolean): Uploaded => ({ filename, project, version, sha256, created });
      const taken = await store.findFile(repository, filename);
      if (taken) {
        if (checked.sha256 !== undefined && taken.sha256 === checked.sha256) {
          file.resume();
          return done(taken.sha256, false);
        }
        throw new ServiceError("invalid_input", FILE_EXISTS);
      }
      const path = filePath(project, version, filename);
      const address = { repository, segments: path.split("/"), path };
      // The index row commits with the file (and goes with it: pypi-store.ts), so the
      // index lists exactly the files stored. Another upload of this name (under another version
      // field, so another path) may win the race past the look-up above: its row decides here.
      // The row, not the file: a file without its row is what an upload cut short by a crash
      // left, and is replaced.
      let already: string | undefined;
      const stored = await deps.artifacts
        .publish(address, file, "application/octet-stream", actor, { digests: checked.digests }, {
          run: async (tx, staged) => {
            const row = { filename, project, displayName: checked.name, version, path, sha256: staged.sha256, size: staged.size, requiresPython: checked.requiresPython, yanked: checked.yanked ?? null };
            if (await store.insertFile(tx, repository, { ...row, ...(checked.uploaded ? { uploaded: checked.uploaded } : {}) })) return;
            if ((await store.findFile(repository, filename, tx))?.sha256 === staged.sha256) already = staged.sha256;
            throw new ServiceError("invalid_input", FILE_EXISTS);
          },
        })
        .catch((err: unknown) => {
          if (already !== undefined) return undefined;
          throw err;
        });
      return stored ? done(stored.sha256, true) : done(already!, false);
    },

    /** PEP 592: yanks (with a reason, "" for none) or unyanks the files of a version, or one of them. */
    async yank(repository: string, name: string, version: string, yanked: string | null, filename?: string): Promise<string[]> {
      writable();
      const project = normalizeProject(name);
      const changed = await store.setYanked(repository, project, version, yanked, filename);
      if (changed.length === 0) throw notFound(`${project} has no ${filename ? `file ${filename} of ` : "files of "}version ${version} in repository ${repository}`);
      return changed;
    },

    /** Removes an uploaded file: its artifact (with its event) and so its index entry. */
    async remove(repository: string, path: string, actor: Actor): Promise<boolean> {
      writable();
      // Its index row goes with the artifact's (pypi-store.ts).
      return deps.artifacts.remove({ repository, segments: path.split("/"), path }, actor);
    },
  };
}
export type PypiRegistry = ReturnType<typeof pypiRegistryFactory>;
