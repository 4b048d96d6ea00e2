import type { Readable } from "node:stream";

/**
 * Reads a request body whole, up to `limit` bytes; undefined when it runs past the limit (the
 * rest is left flowing and dropped, not destroyed, so the caller reads the answer instead of a
 * reset connection).
 */
export function readWhole(body: Readable, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      body.off("data", onData);
      body.resume();
      resolve(undefined);
    };
    body.on("data", onData);
    body.once("end", () => resolve(Buffer.concat(chunks, size)));
    body.once("error", reject);
  });
}
