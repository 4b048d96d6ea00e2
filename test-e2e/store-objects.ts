import { existsSync, linkSync, mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DeleteObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { inject } from "vitest";
import { filesystemBlobStore, s3BlobStore, type BlobStore } from "../packages/blobs/src/index.js";
import type { Suite } from "./suite.js";

/**
 * The suite's blob store reached behind the server's back, for a test that plays a fault (a blob
 * deleted or changed outside, a crash's leftovers), on whichever backend the suite runs: the
 * folder (svc.filesystem-root) or, in the S3 pass, the suite's bucket. The layouts are the blob
 * stores' own (packages/blobs/src/filesystem.ts, s3.ts):
 *   filesystem   blobs/sha256/<ab>/<sha256 hex>   tmp/<name>      (a staged upload)
 *   S3           blobs/sha256/<ab>/<sha256 hex>   staging/<name>  (svc.storage.s3.prefix is blank in the tests)
 */
export interface StoreObjects {
  kind: "filesystem" | "s3";
  /** Writes a blob's object with these bytes (the digest's own, or others: a corrupt blob). */
  writeBlob(sha256: string, content: string | Buffer): Promise<void>;
  removeBlob(sha256: string): Promise<void>;
  hasBlob(sha256: string): Promise<boolean>;
  /** Writes a staged upload nobody committed. */
  writeStaged(name: string, content: string | Buffer): Promise<void>;
  hasStaged(name: string): Promise<boolean>;
  /**
   * Dates a blob or a staged upload `ms` back. The filesystem only: an object store sets an
   * object's modified time itself, to when it was written.
   */
  backdate?(what: { blob: string } | { staged: string }, ms: number): void;
  /** The blob store itself, as the services open it (close it after use). */
  blobStore(): BlobStore & { close?(): void };
  close(): void;
}

const blobKey = (sha256: string) => `blobs/sha256/${sha256.slice(0, 2)}/${sha256}`;

export function storeObjects(s: Suite): StoreObjects {
  return s.bucket === undefined ? folder(s.storeRoot) : bucket(s.bucket);
}

function folder(root: string): StoreObjects {
  const blob = (sha256: string) => join(root, ...blobKey(sha256).split("/"));
  const staged = (name: string) => join(root, "tmp", name);
  const write = (path: string, content: string | Buffer) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  };
  return {
    kind: "filesystem",
    writeBlob: async (sha256, content) => write(blob(sha256), content),
    removeBlob: async (sha256) => rmSync(blob(sha256)),
    hasBlob: async (sha256) => existsSync(blob(sha256)),
    writeStaged: async (name, content) => write(staged(name), content),
    hasStaged: async (name) => existsSync(staged(name)),
    backdate(what, ms) {
      const at = new Date(Date.now() - ms);
      utimesSync("blob" in what ? blob(what.blob) : staged(what.staged), at, at);
    },
    blobStore: () => filesystemBlobStore({ root, readOnly: false }),
    close() {},
  };
}

/** Links a staged file to a blob (the filesystem's commit is a hard link). */
export function linkStagedAsBlob(root: string, name: string, sha256: string): void {
  const to = join(root, ...blobKey(sha256).split("/"));
  mkdirSync(dirname(to), { recursive: true });
  linkSync(join(root, "tmp", name), to);
}

function bucket(Bucket: string): StoreObjects {
  const s3 = inject("s3");
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey },
    // As the blob store sets it: RGW 16 refuses the SDK's default checksums.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const put = async (Key: string, content: string | Buffer) => {
    const Body = Buffer.from(content);
    await client.send(new PutObjectCommand({ Bucket, Key, Body, ContentLength: Body.length }));
  };
  const has = async (Key: string) =>
    client.send(new HeadObjectCommand({ Bucket, Key })).then(
      () => true,
      (err: { $metadata?: { httpStatusCode?: number } }) => {
        if (err.$metadata?.httpStatusCode === 404) return false;
        throw err;
      },
    );
  return {
    kind: "s3",
    writeBlob: (sha256, content) => put(blobKey(sha256), content),
    removeBlob: async (sha256) => void (await client.send(new DeleteObjectCommand({ Bucket, Key: blobKey(sha256) }))),
    hasBlob: (sha256) => has(blobKey(sha256)),
    writeStaged: (name, content) => put(`staging/${name}`, content),
    hasStaged: (name) => has(`staging/${name}`),
    blobStore: () => s3BlobStore({ bucket: Bucket, endpoint: s3.endpoint, region: s3.region, pathStyle: true, accessKey: s3.accessKey, secretKey: s3.secretKey, readOnly: false }),
    close: () => client.destroy(),
  };
}
