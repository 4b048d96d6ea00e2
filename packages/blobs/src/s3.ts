import { randomUUID } from "node:crypto";
import { Readable, type Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { forbidden } from "@svc/contracts";
import {
  BlobStoreMisconfigured,
  BlobStoreUnavailable,
  READ_ONLY,
  hashing,
  isDigest,
  putThroughStaging,
  type AbandonedUpload,
  type BlobInfo,
  type BlobStore,
  type ByteRange,
  type StagedBlob,
  type StagedInfo,
} from "./blob-store.js";

/**
 * The S3-compatible backend (AWS S3, Ceph RGW, MinIO, ...), on the layout under the bucket:
 *   <prefix>blobs/sha256/<ab>/<sha256 hex>   a blob, one object per digest
 *   <prefix>staging/<uuid>                   staged content (a completed object, or a multipart upload under way)
 * A stage streams the content into a staged object in parts, hashing it on the way (memory:
 * one part); a commit copies it server-side as the blob of its digest when that is absent,
 * else copies the blob onto itself so its modified time moves forward (a reclaim's grace counts
 * from this use).
 */
export interface S3BlobStoreOptions {
  bucket: string;
  /** Blank: AWS (from the region). */
  endpoint?: string;
  region?: string;
  /** Path-style addressing (most self-hosted stores); virtual-hosted style otherwise. */
  pathStyle?: boolean;
  /** Prefix of every key, e.g. "svc/" (a bucket shared with other data). */
  prefix?: string;
  /** Both given: these keys; else the standard AWS chain (environment, web identity, profile, instance role). */
  accessKey?: string;
  secretKey?: string;
  readOnly: boolean;
  /**
   * "growing" (default): the part size doubles every 1,000 parts from `partSize`, so an object of
   * any size up to S3's 5 TiB fits the 10,000-part cap. "equal": every part `partSize` (stores
   * that require equal parts; the largest object is then 10,000 × partSize).
   */
  partSizeMode?: "growing" | "equal";
  /** Bytes of the first part (at least 5 MiB, S3's minimum; default 8 MiB). */
  partSize?: number;
  /** Milliseconds to connect before the store counts as unreachable (default 3000). */
  connectTimeoutMs?: number;
  /** Milliseconds a request's connection may stay silent (nothing sent or received) before the store counts as hung (default 20000). */
  idleTimeoutMs?: number;
  /** Attempts per request, the first included (default 2). */
  maxAttempts?: number;
}

export interface S3BlobStore extends BlobStore {
  readonly bucket: string;
  /** The bucket answers, and (`write`, default unless read-only) takes an object and lets it go. */
  check(opts?: { write?: boolean }): Promise<void>;
  listAbandonedUploads(opts: { olderThanMs: number; limit: number }): Promise<AbandonedUpload[]>;
  abortUpload(upload: AbandonedUpload): Promise<void>;
  /**
   * A pre-signed GET URL of a blob's object, valid `expiresInSeconds` (svc.storage.s3.redirect):
   * signed for that one key, with the answer's Content-Type and Content-Disposition as the
   * server would send them (S3's response-content-type / response-content-disposition). Made
   * locally: nothing is asked of the store. It holds the signature, the access key id and, with
   * temporary credentials, their session token; never the secret key. Never log it.
   */
  signedGetUrl(sha256: string, opts: { expiresInSeconds: number; contentType: string; contentDisposition?: string }): Promise<string>;
  /** Releases the client's sockets. */
  close(): void;
}

const MiB = 1024 * 1024;
const MIN_PART = 5 * MiB;
const MAX_PART = 5 * 1024 * MiB;
const MAX_PARTS = 10_000;
/** CopyObject copies at most 5 GiB; larger objects are copied in parts of this size. */
const MAX_COPY = 5 * 1024 * MiB;
const COPY_PART = 1024 * MiB;
const STAGED_NAME = /^[0-9A-Za-z-]{1,64}$/;

const BUCKET_SETTING = "svc.storage.s3.bucket";
const KEY_SETTING = "svc.storage.s3.access-key";

const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ECONNABORTED", "ERR_STREAM_PREMATURE_CLOSE"]);
const UNAVAILABLE_NAMES = new Set(["TimeoutError", "RequestTimeout", "RequestTimeoutException", "SlowDown", "ServiceUnavailable", "InternalError", "ThrottlingException", "AbortError"]);
const CREDENTIAL_NAMES = new Set(["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "CredentialsProviderError", "InvalidToken", "ExpiredToken", "Forbidden"]);

interface SdkError {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

const statusOf = (err: unknown) => (err as SdkError).$metadata?.httpStatusCode;
const isMissing = (err: unknown) => {
  const name = (err as SdkError).name;
  return name === "NoSuchKey" || name === "NotFound" || (statusOf(err) === 404 && name !== "NoSuchBucket");
};

/**
 * The error a caller can act on: BlobStoreUnavailable for an outage, BlobStoreMisconfigured for
 * wrong settings (never with a credential in it), else the error as it came.
 */
function classify(err: unknown, bucket: string): unknown {
  if (err instanceof BlobStoreUnavailable || err instanceof BlobStoreMisconfigured) return err;
  const e = err as SdkError;
  const status = statusOf(err);
  const name = e?.name ?? "";
  if (name === "NoSuchBucket") return new BlobStoreMisconfigured(BUCKET_SETTING, `the object store has no bucket "${bucket}" (${BUCKET_SETTING})`);
  if (CREDENTIAL_NAMES.has(name) || status === 403) {
    return new BlobStoreMisconfigured(KEY_SETTING, `the object store refused the credentials for bucket "${bucket}" (${name || `HTTP ${status}`}): check ${KEY_SETTING} and svc.storage.s3.secret-key, or the AWS credential chain`);
  }
  if (UNAVAILABLE_NAMES.has(name) || (e?.code !== undefined && NETWORK_CODES.has(e.code)) || (status !== undefined && status >= 500) || (status === undefined && /socket|connect|network|timed? ?out/i.test(String((err as Error)?.message)))) {
    return new BlobStoreUnavailable(`the object store did not answer (${e?.code ?? (name || `HTTP ${status}`)})`);
  }
  return err;
}

/** The size of part `n` (0-based). */
export function partSizeOf(n: number, mode: "growing" | "equal", base: number): number {
  if (mode === "equal") return base;
  return Math.min(MAX_PART, base * 2 ** Math.floor(n / 1000));
}

export function s3BlobStore(opts: S3BlobStoreOptions): S3BlobStore {
  const bucket = opts.bucket;
  if (!bucket) throw new BlobStoreMisconfigured(BUCKET_SETTING, `svc.storage=s3 needs a bucket (${BUCKET_SETTING})`);
  if ((opts.accessKey ? 1 : 0) + (opts.secretKey ? 1 : 0) === 1) {
    throw new BlobStoreMisconfigured(KEY_SETTING, `${KEY_SETTING} and svc.storage.s3.secret-key go together: give both, or neither for the AWS credential chain`);
  }
  const prefix = opts.prefix ?? "";
  const mode = opts.partSizeMode ?? "growing";
  const base = Math.max(MIN_PART, opts.partSize ?? 8 * MiB);
  const client = new S3Client({
    region: opts.region || "us-east-1",
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    forcePathStyle: opts.pathStyle ?? false,
    ...(opts.accessKey && opts.secretKey ? { credentials: { accessKeyId: opts.accessKey, secretAccessKey: opts.secretKey } } : {}),
    // SDK >= 3.729 adds checksums by default, which break a streamed upload on Ceph RGW 16.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // A hung store costs attempts × the idle bound: 2 × 20 s answers a 503 before the
    // gateway's own 60 s bound on a silent upstream.
    maxAttempts: opts.maxAttempts ?? 2,
    // A store that accepts the connection and then says nothing (hung) must not hold a request
    // forever: the socket's idle time is bounded. Never the total time (the SDK's
    // requestTimeout): a part of a huge upload or a long download may take as long as it flows.
    requestHandler: { connectionTimeout: opts.connectTimeoutMs ?? 3000, socketTimeout: opts.idleTimeoutMs ?? 20_000 },
  });
  const blobsPrefix = `${prefix}blobs/sha256/`;
  const stagingPrefix = `${prefix}staging/`;
  const blobKey = (sha256: string) => `${blobsPrefix}${sha256.slice(0, 2)}/${sha256}`;
  const stagedKey = (name: string) => `${stagingPrefix}${name}`;
  /** When the newest part of a multipart upload arrived (undefined: no part yet, or the upload is gone). */
  const lastPartAt = async (key: string, uploadId: string): Promise<Date | undefined> => {
    let newest: Date | undefined;
    let marker: string | undefined;
    for (;;) {
      const page = await send(() => client.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }))).catch((err: unknown) => {
        if ((err as SdkError).name === "NoSuchUpload" || statusOf(err) === 404) return undefined;
        throw err;
      });
      for (const p of page?.Parts ?? []) if (p.LastModified && (!newest || p.LastModified > newest)) newest = p.LastModified;
      if (!page?.IsTruncated || !page.NextPartNumberMarker) return newest;
      marker = page.NextPartNumberMarker;
    }
  };
  const writable = () => {
    if (opts.readOnly) throw forbidden(READ_ONLY);
  };
  /** One SDK call, its failure classified. */
  const send = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw classify(err, bucket);
    }
  };
  const headKey = async (key: string) => {
    try {
      return await send(() => client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })));
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  };

  /** Streams `body` (its parts read as they come, one held at a time) to `key`: one PutObject when it fits a part. */
  const upload = async (body: AsyncIterable<Buffer>, key: string): Promise<void> => {
    let chunks: Buffer[] = [];
    let held = 0;
    let uploadId: string | undefined;
    const parts: CompletedPart[] = [];
    const take = (n: number): Buffer => {
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, held);
      const part = all.subarray(0, n);
      const rest = all.subarray(n);
      chunks = rest.length > 0 ? [rest] : [];
      held = rest.length;
      return part;
    };
    const sendPart = async (part: Buffer) => {
      uploadId ??= (await send(() => client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key })))).UploadId;
      const PartNumber = parts.length + 1;
      if (PartNumber > MAX_PARTS) throw new Error(`more than ${MAX_PARTS} parts: the content is larger than this part size allows (svc.storage.s3.equal-parts)`);
      const { ETag } = await send(() => client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber, Body: part, ContentLength: part.length })));
      parts.push({ PartNumber, ETag });
    };
    try {
      for await (const chunk of body) {
        chunks.push(chunk);
        held += chunk.length;
        for (let size = partSizeOf(parts.length, mode, base); held >= size; size = partSizeOf(parts.length, mode, base)) {
          // The last part may be smaller; a full one is sent only once more bytes follow it.
          if (held === size) break;
          await sendPart(take(size));
        }
      }
      const last = take(held);
      if (uploadId === undefined) {
        await send(() => client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: last, ContentLength: last.length })));
        return;
      }
      await sendPart(last);
      // RGW answers an empty ETag here: nothing reads it.
      await send(() => client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } })));
    } catch (err) {
      if (uploadId !== undefined) await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId })).catch(() => {});
      throw err;
    }
  };

  /** A server-side copy (onto itself: its modified time moves forward), in parts above 5 GiB. */
  const copy = async (from: string, to: string, size: number): Promise<void> => {
    const source = `${bucket}/${from.split("/").map(encodeURIComponent).join("/")}`;
    if (size <= MAX_COPY) {
      await send(() => client.send(new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: source, MetadataDirective: "REPLACE" })));
      return;
    }
    const { UploadId } = await send(() => client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: to })));
    try {
      const parts: CompletedPart[] = [];
      for (let at = 0, n = 1; at < size; at += COPY_PART, n++) {
        const end = Math.min(size, at + COPY_PART) - 1;
        const r = await send(() => client.send(new UploadPartCopyCommand({ Bucket: bucket, Key: to, UploadId, PartNumber: n, CopySource: source, CopySourceRange: `bytes=${at}-${end}` })));
        parts.push({ PartNumber: n, ETag: r.CopyPartResult?.ETag });
      }
      await send(() => client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: to, UploadId, MultipartUpload: { Parts: parts } })));
    } catch (err) {
      await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: to, UploadId })).catch(() => {});
      throw err;
    }
  };

  const stage = async (source: Readable | Buffer, o: { through?: readonly Transform[] } = {}): Promise<StagedBlob> => {
    writable();
    const name = randomUUID();
    const h = hashing(source, o.through);
    // The last stage consumes the hashed bytes part by part (pipeline's own typing has no spread of stages).
    const run = pipeline as unknown as (...stages: unknown[]) => Promise<void>;
    // When the upload fails, leaving its loop destroys the hashed stream with an AbortError that
    // reaches the pipeline first (the upload still aborts its multipart upload): the upload's
    // own error (an outage: 503) is the one to answer.
    let uploading: Promise<void> | undefined;
    const consume = (body: AsyncIterable<Buffer>) => (uploading = upload(body, stagedKey(name)));
    await run(Buffer.isBuffer(source) ? Readable.from([source]) : source, ...(o.through ?? []), h.stream, consume).catch(async (err: unknown) => {
      throw (await uploading?.then(() => undefined, (e: unknown) => ({ e })))?.e ?? err;
    });
    return { name, ...h.result() };
  };

  const commit = async (staged: StagedBlob): Promise<{ created: boolean }> => {
    writable();
    if (!isDigest(staged.sha256) || !STAGED_NAME.test(staged.name)) throw new Error("not a staged blob of this store");
    const key = blobKey(staged.sha256);
    const existing = await headKey(key);
    if (existing) {
      await copy(key, key, existing.ContentLength ?? staged.size);
      return { created: false };
    }
    await copy(stagedKey(staged.name), key, staged.size);
    return { created: true };
  };

  const discard = async (staged: StagedBlob): Promise<void> => {
    if (!STAGED_NAME.test(staged.name)) return;
    await send(() => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: stagedKey(staged.name) }))).catch(() => {});
  };

  /** Keys under `under` after `startAfter`, one listing page at a time, until `limit` matched `keep`. */
  const listKeys = async <T>(under: string, startAfter: string | undefined, limit: number, keep: (key: string, size: number, modified: Date) => T | undefined): Promise<T[]> => {
    const out: T[] = [];
    let token: string | undefined;
    while (out.length < limit) {
      const page = await send(() =>
        client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: under, MaxKeys: Math.min(1000, Math.max(limit - out.length, 1)), ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}) })),
      );
      for (const o of page.Contents ?? []) {
        const item = o.Key ? keep(o.Key, o.Size ?? 0, o.LastModified ?? new Date(0)) : undefined;
        if (item !== undefined) out.push(item);
        if (out.length >= limit) break;
      }
      if (!page.IsTruncated || !page.NextContinuationToken) break;
      token = page.NextContinuationToken;
    }
    return out;
  };

  return {
    kind: "s3",
    readOnly: opts.readOnly,
    bucket,
    stage,
    commit,
    discard,

    put: (source, o) => putThroughStaging({ stage, commit, discard }, source, o),

    async head(sha256) {
      if (!isDigest(sha256)) return undefined;
      const h = await headKey(blobKey(sha256));
      return h ? { sha256, size: h.ContentLength ?? 0, modified: h.LastModified ?? new Date(0) } : undefined;
    },

    async get(sha256: string, range?: ByteRange) {
      if (!isDigest(sha256)) return undefined;
      try {
        const r = await send(() => client.send(new GetObjectCommand({ Bucket: bucket, Key: blobKey(sha256), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) })));
        return r.Body as Readable;
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },

    async delete(sha256) {
      writable();
      if (!isDigest(sha256)) return false;
      if (!(await headKey(blobKey(sha256)))) return false;
      await send(() => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: blobKey(sha256) })));
      return true;
    },

    async list({ after, limit }) {
      if (limit <= 0) return [];
      const startAfter = after !== undefined && isDigest(after) ? blobKey(after) : after !== undefined ? `${blobsPrefix}${after}` : undefined;
      return listKeys<BlobInfo>(blobsPrefix, startAfter, limit, (key, size, modified) => {
        const rest = key.slice(blobsPrefix.length);
        const sha256 = rest.slice(3);
        return rest.length === 67 && rest[2] === "/" && isDigest(sha256) && rest.startsWith(sha256.slice(0, 2)) ? { sha256, size, modified } : undefined;
      });
    },

    async listStaged({ after, limit }) {
      if (limit <= 0) return [];
      return listKeys<StagedInfo>(stagingPrefix, after !== undefined ? stagedKey(after) : undefined, limit, (key, size, modified) => {
        const name = key.slice(stagingPrefix.length);
        return STAGED_NAME.test(name) ? { name, size, modified } : undefined;
      });
    },

    async deleteStaged(name, olderThanMs) {
      writable();
      if (!STAGED_NAME.test(name)) return undefined;
      const h = await headKey(stagedKey(name));
      if (!h || Date.now() - (h.LastModified?.getTime() ?? 0) < olderThanMs) return undefined;
      await send(() => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: stagedKey(name) })));
      return h.ContentLength ?? 0;
    },

    async listAbandonedUploads({ olderThanMs, limit }) {
      const out: AbandonedUpload[] = [];
      let keyMarker: string | undefined;
      let uploadIdMarker: string | undefined;
      while (out.length < limit) {
        const page = await send(() => client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix || undefined, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker })));
        for (const u of page.Uploads ?? []) {
          if (!u.Key || !u.UploadId || !u.Initiated || Date.now() - u.Initiated.getTime() < olderThanMs) continue;
          // Begun long ago is not abandoned: a 100 GiB upload takes hours. One whose last part came within the bound is still going.
          const last = await lastPartAt(u.Key, u.UploadId);
          if (last && Date.now() - last.getTime() < olderThanMs) continue;
          out.push({ key: u.Key, uploadId: u.UploadId, initiated: u.Initiated });
          if (out.length >= limit) break;
        }
        if (!page.IsTruncated) break;
        keyMarker = page.NextKeyMarker;
        uploadIdMarker = page.NextUploadIdMarker;
      }
      return out;
    },

    async abortUpload(u) {
      writable();
      if (!u.key.startsWith(prefix)) throw new Error("not an upload of this store");
      await send(() => client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.key, UploadId: u.uploadId }))).catch((err: unknown) => {
        if ((err as SdkError).name !== "NoSuchUpload" && statusOf(err) !== 404) throw err;
      });
    },

    async check({ write = !opts.readOnly } = {}) {
      try {
        await send(() => client.send(new HeadBucketCommand({ Bucket: bucket })));
      } catch (err) {
        // HEAD has no body: a 404 or a 403 is all the store says.
        if (statusOf(err) === 404 || (err as SdkError).name === "NotFound") throw new BlobStoreMisconfigured(BUCKET_SETTING, `the object store has no bucket "${bucket}" (${BUCKET_SETTING})`);
        throw err;
      }
      if (!write) {
        await send(() => client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: blobsPrefix, MaxKeys: 1 })));
        return;
      }
      // Writable: a staged object written and removed (a leftover is a staged leftover the reclaim removes).
      const key = stagedKey(`check-${randomUUID()}`);
      await send(() => client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: Buffer.from("check"), ContentLength: 5 })));
      await send(() => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })));
    },

    async signedGetUrl(sha256, o) {
      if (!isDigest(sha256)) throw new Error("not a blob digest");
      const command = new GetObjectCommand({
        Bucket: bucket,
        Key: blobKey(sha256),
        ResponseContentType: o.contentType,
        ...(o.contentDisposition ? { ResponseContentDisposition: o.contentDisposition } : {}),
      });
      return send(() => getSignedUrl(client, command, { expiresIn: Math.max(1, Math.round(o.expiresInSeconds)) }));
    },

    close() {
      client.destroy();
    },
  };
}
