import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { isUtf8MimeType, mime } from "@fastify/send";
import { etagOf } from "../domain/upload-checks.js";

/** Files up to this size may be answered by readSmallFile. */
export const SMALL_FILE_BYTES = 64 * 1024;

/** Request headers that need @fastify/send's handling (ranges, conditional requests). */
const NEEDS_SEND = ["range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since"] as const;

export interface SmallFile {
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * A plain GET of a small regular file, read whole on the event loop (open, fstat, read, close
 * without the thread pool), with the headers @fastify/send would answer: its entity tag,
 * Last-Modified, Content-Type and Accept-Ranges. Each trip to the thread pool costs two thread
 * wake-ups, which on a virtual machine cost more CPU than reading a few KB from the page cache
 * (a small file is almost always there: it was just written or read); nginx reads files on its
 * event loop the same way unless given a thread pool. Undefined leaves the request to
 * @fastify/send: a range or a condition, a folder, a missing or larger file, any error.
 */
export function readSmallFile(file: string, headers: IncomingHttpHeaders): SmallFile | undefined {
  if (NEEDS_SEND.some((h) => headers[h] !== undefined)) return undefined;
  let fd: number;
  try {
    // Non-blocking: what is not a regular file (a FIFO put there by hand) never holds the loop; fstat turns it away.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > SMALL_FILE_BYTES) return undefined;
    // The descriptor holds the inode read: a write renaming a new file into place meanwhile is not mixed in.
    const body = Buffer.allocUnsafe(st.size);
    let at = 0;
    while (at < st.size) {
      const n = readSync(fd, body, at, st.size - at, at);
      if (n === 0) return undefined;
      at += n;
    }
    // As @fastify/send picks it (its `mime` has no default type: an unknown extension gets none).
    let type = mime.getType(file) || (mime as { default_type?: string }).default_type;
    if (type && isUtf8MimeType(type)) type += "; charset=utf-8";
    return {
      body,
      headers: {
        "accept-ranges": "bytes",
        "last-modified": st.mtime.toUTCString(),
        etag: etagOf({ size: st.size, mtimeMs: Math.floor(st.mtimeMs), httpMtimeMs: st.mtime.getTime() }),
        ...(type ? { "content-type": type } : {}),
        "content-length": String(st.size),
      },
    };
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
