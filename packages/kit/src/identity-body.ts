import { createHash, timingSafeEqual, type KeyObject } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { Transform, type Readable } from "node:stream";
import { IDENTITY_BODY_TRAILER, SHA256_OF_BYTES, ServiceError, type HashedBytes } from "@svc/contracts";
import { BODY_IN_TRAILER, bodyTrailer } from "./identity.js";

/** What the verified signature says of the body (identity.ts). */
export interface BodyBinding {
  /** `sha256=<base64url>` or `trailer`. */
  body: string;
  signature: string;
  key: KeyObject;
}

const mismatch = () => new ServiceError("unauthenticated", "the request body is not the one the gateway signed");

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Passes bytes on unchanged while hashing them (SHA-256); at their end, before the reader sees
 * it, hands the digest (base64url) to `atEnd`, whose error, if any, fails the stream.
 */
export function sha256Through(atEnd: (sha256: string) => Error | undefined): Transform {
  const hash = createHash("sha256");
  let size = 0;
  let ended: { sha256: string; size: number } | undefined;
  const through = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      size += chunk.length;
      cb(null, chunk);
    },
    flush(cb) {
      const digest = hash.digest();
      ended = { sha256: digest.toString("hex"), size };
      cb(atEnd(digest.toString("base64url")) ?? null);
    },
  });
  // What passed, for a reader that would hash it again (the blob store), known before it sees the end.
  (through as HashedBytes)[SHA256_OF_BYTES] = () => ended;
  return through;
}

/**
 * Passes the body on unchanged while hashing it; at its end, before the reader sees the end,
 * fails the stream unless the SHA-256 is the one the signature binds (up front, or in the
 * trailer that follows a streamed body). A reader that stores the body (the artifacts store)
 * therefore never commits a body the gateway did not sign; nothing is buffered.
 */
export function checkedBody(payload: Readable, raw: IncomingMessage, binding: BodyBinding): Readable {
  const check = sha256Through((sha256) => {
    if (binding.body === BODY_IN_TRAILER) {
      // Node has read the trailers by the time the body ends.
      const trailer = raw.trailers[IDENTITY_BODY_TRAILER];
      return typeof trailer === "string" && same(trailer, bodyTrailer(binding.key, binding.signature, sha256)) ? undefined : mismatch();
    }
    return same(binding.body, `sha256=${sha256}`) ? undefined : mismatch();
  });
  // Joined by hand rather than by stream.pipeline, which makes an AbortController per body and,
  // at its end, an abort error it throws away (a tenth of a millisecond of each npm publish).
  payload.pipe(check);
  payload.once("error", (err) => check.destroy(err));
  check.once("close", () => {
    if (payload.destroyed || payload.readableEnded) return;
    payload.unpipe(check);
    // The reader gave up early (the store failed, a body too large). The request's own stream
    // is read on and dropped, so the connection lives to carry the answer; destroying it would
    // close the connection first. Anything else in front of it goes.
    if (payload === raw) payload.resume();
    else payload.destroy();
  });
  return check;
}
