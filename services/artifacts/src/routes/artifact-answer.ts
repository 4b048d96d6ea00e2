import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { isUtf8MimeType, mime } from "@fastify/send";
import parseRange from "range-parser";
import type { BlobStore } from "@svc/blobs";
import { ServiceError, notFound } from "@svc/contracts";
import { attachment, mustBeSaved } from "@svc/kit";
import { etagOf, opaque } from "../domain/upload-checks.js";

/** What a GET or HEAD of an artifact answers from: its index row (the truth of what the path holds). */
export interface ArtifactRow {
  repository: string;
  path: string;
  size: number;
  sha256: string;
  updated: Date;
}

/** Blobs up to this size are read whole, at once, when the backend can (BlobStore.readSmall). */
export const SMALL_FILE_BYTES = 64 * 1024;

/** How an answer goes: its status and headers, and the bytes to send (all, a range, or none). */
export type Plan =
  | { status: 200 | 206; headers: Record<string, string>; range?: { start: number; end: number } }
  | { status: 304; headers: Record<string, string> };

/**
 * The content type a path is served with: from its extension, as it always was (@fastify/send's
 * choice: no type for an unknown extension, `; charset=utf-8` for a text type).
 */
export function contentTypeOf(path: string): string | undefined {
  let type = mime.getType(path) || (mime as { default_type?: string }).default_type;
  if (type && isUtf8MimeType(type)) type += "; charset=utf-8";
  return type || undefined;
}

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(", ") : v;
};
const tagsOf = (value: string) => value.split(",").map(opaque).filter((t) => t !== "");

/**
 * Plans the answer to a GET or HEAD of an artifact, as @fastify/send answered a file (which it
 * replaces: bytes come from the blob store, not from a path): the entity tag is the content's
 * SHA-256 (strong), Last-Modified the index's publish time. If-Match and If-Unmodified-Since
 * fail with 412; If-None-Match and If-Modified-Since answer 304 (unless Cache-Control:
 * no-cache); a single byte range answers 206 unless If-Range names another version;
 * several ranges, or a malformed Range, the whole artifact; an unsatisfiable one 416.
 */
export function planAnswer(h: IncomingHttpHeaders, row: Pick<ArtifactRow, "path" | "size" | "sha256" | "updated">): Plan {
  const etag = etagOf(row.sha256);
  const lastModified = row.updated.toUTCString();
  const modifiedAt = Date.parse(lastModified);
  const type = contentTypeOf(row.path);
  // X-Checksum-Sha256 as Artifactory and Nexus answer it: a proxy of this server checks what it fetches against it.
  const headers: Record<string, string> = { "accept-ranges": "bytes", "last-modified": lastModified, etag, "x-checksum-sha256": row.sha256, ...(type ? { "content-type": type } : {}) };

  const ifMatch = header(h, "if-match");
  if (ifMatch && ifMatch.trim() !== "*" && !tagsOf(ifMatch).includes(etag)) throw new ServiceError("precondition_failed", "the artifact does not match If-Match or has changed since If-Unmodified-Since");
  const ifUnmodifiedSince = header(h, "if-unmodified-since");
  if (ifUnmodifiedSince !== undefined) {
    const since = Date.parse(ifUnmodifiedSince);
    if (!Number.isNaN(since) && modifiedAt > since) throw new ServiceError("precondition_failed", "the artifact does not match If-Match or has changed since If-Unmodified-Since");
  }
  if (!(header(h, "cache-control") ?? "").includes("no-cache")) {
    const ifNoneMatch = header(h, "if-none-match");
    // If-Modified-Since counts only without If-None-Match (RFC 9110 13.1.3).
    const notModified =
      ifNoneMatch !== undefined
        ? ifNoneMatch.trim() === "*" || tagsOf(ifNoneMatch).includes(etag)
        : (() => {
            const since = Date.parse(header(h, "if-modified-since") ?? "");
            return !Number.isNaN(since) && modifiedAt <= since;
          })();
    if (notModified) {
      const { "content-type": _, ...kept } = headers;
      return { status: 304, headers: kept };
    }
  }

  const range = header(h, "range");
  if (range !== undefined && /^ *bytes=/.test(range) && rangeFresh(header(h, "if-range"), etag, modifiedAt)) {
    const ranges = parseRange(row.size, range, { combine: true });
    if (ranges === -1 || (Array.isArray(ranges) && ranges.length === 0)) {
      throw new ServiceError("range_not_satisfiable", "the requested range is not within the artifact", { headers: { "content-range": `bytes */${row.size}` } });
    }
    if (Array.isArray(ranges) && ranges.length === 1) {
      const r = ranges[0]!;
      return { status: 206, headers: { ...headers, "content-range": `bytes ${r.start}-${r.end}/${row.size}`, "content-length": String(r.end - r.start + 1) }, range: { start: r.start, end: r.end } };
    }
  }
  return { status: 200, headers: { ...headers, "content-length": String(row.size) } };
}

/** If-Range: the range counts only while the artifact is the version it names (a tag, or a date). */
function rangeFresh(ifRange: string | undefined, etag: string, modifiedAt: number): boolean {
  if (ifRange === undefined) return true;
  if (ifRange.includes('"')) return ifRange.includes(etag);
  const at = Date.parse(ifRange);
  return !Number.isNaN(at) && modifiedAt <= at;
}

/** Request headers that make a GET ask for less than the whole file, or for it only on a condition. */
const PARTIAL_OR_CONDITIONAL = ["range", "if-range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since"] as const;

/**
 * Whether a request may be answered with a proxied file as it arrives from the upstream
 * (proxy/file-fetch.ts, LiveFile): a GET of the whole file, unconditionally. Anything else waits
 * for the stored file, which has the validators and the length such a request needs.
 */
export const takesLiveFile = (req: Pick<FastifyRequest, "method" | "headers">): boolean => req.method === "GET" && PARTIAL_OR_CONDITIONAL.every((h) => req.headers[h] === undefined);

/**
 * Answers a GET with a proxied file as it arrives: 200, its type from its path as a stored file's,
 * the upstream's Content-Length when it declared one. A fetch that fails after bytes were sent
 * destroys `live.body`, and fastify then destroys the response: the client sees it incomplete
 * (shorter than its Content-Length, or a chunked body never ended). One that fails before any
 * byte was sent is answered as an error (fastify sends the headers with the first byte).
 */
export function answerLiveFile(reply: FastifyReply, path: string, live: { body: Readable; size: number | undefined }): FastifyReply {
  const type = contentTypeOf(path);
  reply.code(200);
  if (type) reply.header("content-type", type);
  if (live.size !== undefined) reply.header("content-length", String(live.size));
  return reply.send(live.body);
}

/**
 * Where a GET's bytes are fetched from instead of this service (svc.storage.s3.redirect): a
 * short-lived signed URL of the blob's object, whose answer carries `contentType` and, when
 * given, `contentDisposition`, as this server would have sent them.
 */
export type ByteRedirect = (row: ArtifactRow, answer: { contentType: string; contentDisposition?: string }) => Promise<string>;

/**
 * Preconditions that name this server's validators (the SHA-256 entity tag, the publish time),
 * which the object store does not know: its ETag and modified time are its own, so a redirected
 * request carrying them would fail there (412) or lose its range. Such a request is streamed.
 */
const OWN_VALIDATORS = ["if-match", "if-unmodified-since", "if-range"] as const;

/**
 * What the object store answers a redirected GET with, as the gateway would have made this
 * server's answer inert: the same type, and `attachment` for whatever a browser would render or
 * run (the object store's origin can send no sandbox policy, so this holds whatever
 * svc.artifacts.separate-origin says).
 */
export function redirectedAnswer(path: string, type: string | undefined): { contentType: string; contentDisposition?: string } {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return { contentType: type ?? "application/octet-stream", ...(mustBeSaved(name, type) ? { contentDisposition: attachment(name) } : {}) };
}

/**
 * Answers a GET or HEAD of an artifact from its index row and its blob. A row whose blob is
 * gone (deleted behind the service's back, until a walk's repair forgets it) answers 404.
 * `type` overrides the content type (a Maven metadata document). Resolves, once the answer is
 * on its way, to the status sent (the handler then returns `reply`: never awaited, as a reply
 * is a thenable that settles when the response ends).
 */
export async function answerArtifact(req: FastifyRequest, reply: FastifyReply, row: ArtifactRow, blobs: Pick<BlobStore, "get" | "head" | "readSmall">, type?: string, redirect?: ByteRedirect): Promise<number> {
  const plan = planAnswer(req.headers, row);
  const headers = type && plan.status !== 304 ? { ...plan.headers, "content-type": type } : plan.headers;
  const missing = () => notFound(`no artifact at ${row.repository}/${row.path}`);
  if (req.method === "HEAD" && plan.status !== 304 && !(await blobs.head(row.sha256))) throw missing();
  if (plan.status === 304 || req.method === "HEAD") {
    reply.code(plan.status).headers(headers).send();
    return plan.status;
  }
  if (redirect && !OWN_VALIDATORS.some((h) => req.headers[h] !== undefined)) {
    // Like distribution's S3 driver: the object checked first, so a blob gone answers 404 here, not at the bucket.
    if (!(await blobs.head(row.sha256))) {
      req.log.warn({ repository: row.repository, path: row.path, sha256: row.sha256 }, "the index names a blob the store does not have");
      throw missing();
    }
    const location = await redirect(row, redirectedAnswer(row.path, headers["content-type"]));
    // Never cached: the URL expires within svc.storage.s3.redirect.ttl. Never logged: it holds a signature.
    reply.code(307).headers({ location, "cache-control": "no-store" }).send();
    return 307;
  }
  const range = plan.status === 206 ? plan.range : undefined;
  // Cache-Control: no-cache reads the store itself, never a copy kept in memory.
  const fresh = (req.headers["cache-control"] ?? "").includes("no-cache");
  if (!range && !fresh && row.size <= SMALL_FILE_BYTES && blobs.readSmall) {
    // A small blob read at once (from the page cache, mostly: it was just written or read).
    const body = blobs.readSmall(row.sha256, SMALL_FILE_BYTES);
    if (body && body.length === row.size) {
      reply.code(plan.status).headers(headers).send(body);
      return plan.status;
    }
  }
  const stream = await blobs.get(row.sha256, range, fresh ? { fresh } : undefined);
  if (!stream) {
    // The index names content the store does not have: deleted behind the service's back (a walk's repair forgets the row).
    req.log.warn({ repository: row.repository, path: row.path, sha256: row.sha256 }, "the index names a blob the store does not have");
    throw missing();
  }
  reply.code(plan.status).headers(headers).send(stream);
  return plan.status;
}
