import { OciError } from "./oci-errors.js";

/**
 * The upload state machine's decisions, apart from their storage (oci-uploads.ts runs them): a
 * session holds the bytes received so far; a chunk must start where they end; the last PUT
 * names the digest the whole must have.
 */

/** The `Range` header of a session holding `size` bytes (`0-0` when empty, as distribution answers). */
export const rangeOf = (size: number): string => `0-${size > 0 ? size - 1 : 0}`;

/** Where a chunk goes: it starts at `start` and, when the client said so, holds `expected` bytes. */
export interface ChunkPlan {
  start: number;
  expected: number | undefined;
}

const outOfOrder = (size: number, why: string) => new OciError("BLOB_UPLOAD_INVALID", why, { status: 416, headers: { range: rangeOf(size) } });

/**
 * A PATCH (or a PUT with a body) to a session holding `size` bytes: with Content-Range
 * (`<start>-<end>`, inclusive), it must start at `size`; without, it is appended (a streamed
 * upload). Content-Length, when both are sent, must agree with the range.
 */
export function planChunk(size: number, contentRange: string | undefined, contentLength: string | undefined): ChunkPlan {
  const length = contentLength === undefined || contentLength === "" ? undefined : Number(contentLength);
  if (length !== undefined && (!Number.isSafeInteger(length) || length < 0)) throw new OciError("SIZE_INVALID", "Content-Length is not a size");
  if (contentRange === undefined || contentRange === "") return { start: size, expected: length };
  const m = /^(?:bytes[ =])?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/.exec(contentRange.trim());
  if (!m) throw outOfOrder(size, `Content-Range "${contentRange}" is not <start>-<end>`);
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (end < start) throw outOfOrder(size, `Content-Range "${contentRange}" ends before it starts`);
  if (start !== size) throw outOfOrder(size, `the chunk starts at byte ${start} but the upload holds ${size} bytes: send the chunk that starts at ${size}`);
  const expected = end - start + 1;
  if (length !== undefined && length !== expected) throw outOfOrder(size, `Content-Length ${length} does not match Content-Range ${contentRange} (${expected} bytes)`);
  return { start, expected };
}

/** The chunk as received against what was announced: a chunk cut short (or longer) is refused and not kept. */
export function checkChunk(plan: ChunkPlan, received: number, size: number): void {
  if (plan.expected !== undefined && received !== plan.expected) {
    throw outOfOrder(size, `the chunk announced ${plan.expected} bytes but ${received} arrived: nothing of it was kept`);
  }
}

/** The chunk landed on a session that moved meanwhile (another request appended first): refused like an out-of-order chunk. */
export function conflictingChunk(start: number, size: number): OciError {
  return outOfOrder(size, `the upload moved to ${size} bytes while this chunk (from byte ${start}) arrived: send the chunk that starts at ${size}`);
}

/** The PUT that ends a session must name the digest of the whole. */
export function requireDigest(digest: string | undefined): string {
  if (digest === undefined || digest === "") throw new OciError("DIGEST_INVALID", "the PUT that completes an upload must carry ?digest=<algorithm>:<hex>");
  return digest;
}
