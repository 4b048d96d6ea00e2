import { createHash } from "node:crypto";
import { Transform, type Readable } from "node:stream";
import { SHA256_OF_BYTES, type HashedBytes } from "@svc/contracts";

/**
 * Content stored once per SHA-256 digest, behind one interface for every backend: the
 * filesystem (the embedded default, one node or a shared volume) and, next, S3-compatible
 * object storage. Nothing of a backend leaks through it: no paths, hard links, renames or
 * directory listings; the path index in Postgres (the artifacts service's) says which path
 * holds which digest, and references are counted from it, never from the store.
 *
 * Writes are two-phase so a publish can check a declared digest and commit its index row
 * before the content counts as stored: stage (streamed, hashed on the way, memory flat
 * whatever the size), then commit (a conditional create under the digest), then discard the
 * staged copy once the index row is committed. Read-only mode (svc.read-only) is enforced
 * here, for every backend: every write refuses with 403.
 */
export interface BlobStore {
  /** Which backend this is ("filesystem", "s3"): for logs and the posture page, never a location or credential. */
  readonly kind: string;
  readonly readOnly: boolean;

  /**
   * Streams content into the staging area, computing its size and SHA-256 as it passes;
   * `through` see the bytes first (a declared-digest check). Visible to nobody until commit.
   * A source that fails or a transform that throws leaves nothing staged.
   */
  stage(source: Readable | Buffer, opts?: { through?: readonly Transform[] }): Promise<StagedBlob>;
  /**
   * Makes staged content the blob of its digest: a conditional create. When the blob exists
   * already it is kept (the staged bytes are not copied again) and its modified time moves
   * forward, so a reclaim's grace period counts from this use. Idempotent: committing again
   * (the blob was reclaimed before the caller's index row committed) creates it again from
   * the staged copy, which stays until discard().
   */
  commit(staged: StagedBlob): Promise<{ created: boolean }>;
  /** Drops the staged copy (after the caller's index row committed, or when it gave up). Never throws for a copy already gone. */
  discard(staged: StagedBlob): Promise<void>;
  /** stage + commit + discard in one call, for content with no index row to wait for. */
  put(source: Readable | Buffer, opts?: { through?: readonly Transform[] }): Promise<StoredBlob>;

  /** The blob of a digest, or undefined. */
  head(sha256: string): Promise<BlobInfo | undefined>;
  /**
   * The blob's bytes, or undefined when there is none; with a range, bytes `start` to `end`
   * inclusive (as HTTP counts them; the caller checked them against the size). `fresh`: read
   * the backend itself, not a copy kept in memory (a request with Cache-Control: no-cache).
   */
  get(sha256: string, range?: ByteRange, opts?: { fresh?: boolean }): Promise<Readable | undefined>;
  /**
   * Optional, for backends that can: a small blob's bytes read at once, without a stream
   * (the filesystem: synchronously, from the page cache, no trip to the thread pool); undefined
   * when it is missing, larger than `maxBytes`, or cannot be read so (the caller then uses get).
   */
  readSmall?(sha256: string, maxBytes: number): Buffer | undefined;
  /** Removes a blob; false when there was none. Whether anything references it is the caller's question. */
  delete(sha256: string): Promise<boolean>;
  /** Blobs in ascending digest order after `after`: one page, at most `limit`. */
  list(opts: { after?: string; limit: number }): Promise<BlobInfo[]>;

  /** Staged copies nobody committed or discarded (a crash, a cut upload), in name order after `after`. */
  listStaged(opts: { after?: string; limit: number }): Promise<StagedInfo[]>;
  /** Removes a staged leftover if it is still untouched for `olderThanMs`: the bytes freed, or undefined. */
  deleteStaged(name: string, olderThanMs: number): Promise<number | undefined>;

  /**
   * Optional, for backends with multipart uploads (S3): uploads started and never completed
   * nor aborted (a process killed mid-stage), begun more than `olderThanMs` ago. The reclaim
   * walk aborts them with abortUpload. The filesystem has none.
   */
  listAbandonedUploads?(opts: { olderThanMs: number; limit: number }): Promise<AbandonedUpload[]>;
  abortUpload?(upload: AbandonedUpload): Promise<void>;
  /** Optional: the store reachable (and writable unless read-only), for startup and readiness; throws BlobStoreUnavailable / BlobStoreMisconfigured. */
  check?(): Promise<void>;
}

export interface AbandonedUpload {
  key: string;
  uploadId: string;
  initiated: Date;
}

/**
 * The object store did not answer, or not in time (down, unreachable, overloaded): an outage
 * the services expect and answer with 503 and Retry-After, not a failure of the request.
 */
export class BlobStoreUnavailable extends Error {
  override readonly name = "BlobStoreUnavailable";
  /** Seconds a client may wait before it tries again. */
  readonly retryAfterSeconds: number = 5;
}

/**
 * The object store answered that the settings are wrong: no such bucket, or credentials
 * refused. `setting` names the setting to fix; the message never holds a credential.
 */
export class BlobStoreMisconfigured extends Error {
  override readonly name = "BlobStoreMisconfigured";
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
  }
}

/** Content staged, not yet a blob; `name` identifies the staged copy (listStaged shows it). */
export interface StagedBlob {
  readonly name: string;
  readonly sha256: string;
  readonly size: number;
}

export interface StoredBlob {
  sha256: string;
  size: number;
  created: boolean;
}

export interface BlobInfo {
  sha256: string;
  size: number;
  /** Last written or committed again (reclaim's grace counts from it). */
  modified: Date;
}

export interface StagedInfo {
  name: string;
  size: number;
  modified: Date;
}

/** Inclusive byte offsets, as an HTTP Range names them. */
export interface ByteRange {
  start: number;
  end: number;
}

/** A blob's name: a lowercase hex SHA-256. */
export const isDigest = (s: string): boolean => /^[0-9a-f]{64}$/.test(s);

export const READ_ONLY = "this server is read-only (svc.read-only): writes are refused";

/** A pass-through that counts and hashes what goes by: its size and SHA-256 once it has ended. */
export function hashing(source?: Readable | Buffer, through: readonly Transform[] = []): { stream: Transform; result: () => { sha256: string; size: number } } {
  // A source that hashes its bytes itself (a signed body the service checks: SHA256_OF_BYTES) is
  // only counted here, when nothing was read from it yet and nothing changes its bytes on the
  // way; its digest must then cover exactly the bytes counted.
  const known = source && !Buffer.isBuffer(source) && !source.readableDidRead && through.length === 0 ? (source as HashedBytes)[SHA256_OF_BYTES] : undefined;
  const hash = known ? undefined : createHash("sha256");
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash?.update(chunk);
      size += chunk.length;
      cb(null, chunk);
    },
  });
  const result = () => {
    if (hash) return { sha256: hash.digest("hex"), size };
    const theirs = known!();
    if (!theirs || theirs.size !== size) throw new Error("the source's digest does not cover the bytes stored");
    return { sha256: theirs.sha256, size };
  };
  return { stream, result };
}

/** put() of every backend: stage, commit, and discard the staged copy whatever happened. */
export async function putThroughStaging(store: Pick<BlobStore, "stage" | "commit" | "discard">, source: Readable | Buffer, opts?: { through?: readonly Transform[] }): Promise<StoredBlob> {
  const staged = await store.stage(source, opts);
  try {
    const { created } = await store.commit(staged);
    return { sha256: staged.sha256, size: staged.size, created };
  } finally {
    await store.discard(staged);
  }
}
