import { createHash, randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { join } from "node:path";
import { Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";

/**
 * The filesystem store under svc.filesystem-root, as the artifacts service writes it and the
 * walker walks it:
 *   repositories/<repository>/<path>   artifact content
 *   tmp/<uuid>                         uploads in progress (same filesystem, renamed into place)
 *   blobs/sha256/<ab>/<sha256 hex>     content stored once by digest: every artifact file is a
 *                                      hard link to its blob, so two paths (in one repository
 *                                      or two) holding the same bytes hold one copy on disk
 * `segments` are an artifact path's validated segments (joined with "/" they are the path).
 */
export function storeLayout(root: string) {
  const repositoriesDir = join(root, "repositories");
  const tmpDir = join(root, "tmp");
  const blobsDir = join(root, "blobs");
  const sha256Dir = join(blobsDir, "sha256");
  return {
    root,
    repositoriesDir,
    tmpDir,
    blobsDir,
    /** blobs/sha256: one folder per first two hex digits, the blobs in them. */
    sha256Dir,
    /** The blob of a content digest (lowercase hex SHA-256). */
    blobOf: (sha256: string) => join(sha256Dir, sha256.slice(0, 2), sha256),
    repositoryDir: (repository: string) => join(repositoriesDir, repository),
    /** A file or folder of a repository. */
    pathOf: (repository: string, segments: readonly string[]) => join(repositoriesDir, repository, ...segments),
    tmpFile: (name: string) => join(tmpDir, name),
    /** Where a new upload is staged. */
    newTmpFile: () => join(tmpDir, randomUUID()),
  };
}

export type StoreLayout = ReturnType<typeof storeLayout>;

/** A blob's file name: a lowercase hex SHA-256 (anything else under blobs/ is not the store's). */
export const isBlobName = (name: string): boolean => /^[0-9a-f]{64}$/.test(name);

/** Size and SHA-256 (hex) of stored content: the digest both the metadata and the walk compare. */
export interface ContentDigest {
  size: number;
  sha256: string;
}

/** How much of a stored file one read takes while hashing it. */
const HASH_READ_BYTES = 256 * 1024;

/** Counts and hashes chunks as they pass; `digest()` is final after the last one. */
function digester(): { add: (chunk: Buffer) => void; digest: () => ContentDigest } {
  const hash = createHash("sha256");
  let size = 0;
  let done: ContentDigest | undefined;
  return {
    add: (chunk) => {
      hash.update(chunk);
      size += chunk.length;
    },
    digest: () => (done ??= { size, sha256: hash.digest("hex") }),
  };
}

/** A pass-through that digests what flows through it (an upload on its way to tmp/). */
export function digestingStream(): { stream: Transform; digest: () => ContentDigest } {
  const d = digester();
  const stream = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      d.add(chunk);
      cb(null, chunk);
    },
  });
  return { stream, digest: d.digest };
}

/** Reads a stored file through once: its size and SHA-256 (hex). */
export async function digestFile(file: string): Promise<ContentDigest> {
  const d = digester();
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      d.add(chunk);
      cb();
    },
  });
  await pipeline(createReadStream(file, { highWaterMark: HASH_READ_BYTES }), sink);
  return d.digest();
}
