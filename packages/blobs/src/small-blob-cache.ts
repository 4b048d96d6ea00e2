import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { LRUCache } from "lru-cache";
import { BlobStoreUnavailable, type BlobStore } from "./blob-store.js";

export interface SmallBlobCacheOptions {
  /** Blobs up to this size are kept (default 64 KiB, the size the artifacts service reads whole). */
  maxBlobBytes?: number;
  /** Bytes kept in all, least recently used out first (default 32 MiB). */
  maxBytes?: number;
}

/**
 * Small blobs kept in memory, for a backend where every read is a round trip (S3: a signed
 * request, milliseconds of CPU and a network hop per GET). Content is addressed by its digest,
 * so a kept copy is never stale: the bytes of a digest do not change, and which path holds which
 * digest is the index's question, asked before the blob is read. A whole-blob get of a body the
 * backend says is small reads it at once and keeps it; readSmall answers from memory (so a kept
 * blob is served while the backend is away, unless the request asks for a fresh read); delete
 * forgets. A store that reads small blobs itself (the filesystem, from the page cache) is left as it is.
 */
export function withSmallBlobCache<S extends BlobStore>(store: S, o: SmallBlobCacheOptions = {}): S {
  if (store.readSmall) return store;
  const maxBlobBytes = o.maxBlobBytes ?? 64 * 1024;
  const cache = new LRUCache<string, Buffer>({ maxSize: o.maxBytes ?? 32 * 1024 * 1024, sizeCalculation: (b) => Math.max(1, b.length) });

  return {
    ...store,
    readSmall(sha256: string, maxBytes: number) {
      const kept = cache.get(sha256);
      return kept && kept.length <= maxBytes ? kept : undefined;
    },
    async get(sha256, range, getOpts) {
      if (range) return store.get(sha256, range);
      const kept = getOpts?.fresh ? undefined : cache.get(sha256);
      if (kept) return Readable.from([kept]);
      const body = await store.get(sha256);
      // The SDK's body is the HTTP response: its declared length says whether to keep it.
      const length = Number((body as Partial<IncomingMessage> | undefined)?.headers?.["content-length"]);
      if (!body || !(length <= maxBlobBytes)) return body;
      const chunks: Buffer[] = [];
      try {
        for await (const c of body) chunks.push(c as Buffer);
      } catch (err) {
        // Cut before its end: the store went away between the answer's head and its last byte.
        throw Object.assign(new BlobStoreUnavailable(`the object store cut a read of a blob: ${(err as Error).message}`), { cause: err });
      }
      const bytes = Buffer.concat(chunks);
      if (bytes.length === length) cache.set(sha256, bytes);
      return Readable.from([bytes]);
    },
    async delete(sha256) {
      cache.delete(sha256);
      return store.delete(sha256);
    },
  };
}
