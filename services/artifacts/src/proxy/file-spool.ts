import { randomUUID } from "node:crypto";
import { mkdir, open, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";

/** Bytes a reader asks of the spool at once: with its stream's buffer, about what one waiter holds in memory. */
const READ_CHUNK = 64 * 1024;

/**
 * Bytes kept from readers until the fetch settles the spool (the file checked at its end, or
 * stored; see file-fetch.ts). With the end missing, a response broken off
 * because the file was refused at its end (a digest that does not match, the gate) is visibly
 * incomplete to every client: shorter than its Content-Length, or a chunked body never ended.
 * One byte would do for that; 64 KiB also keeps a file that small from being streamed at all (it
 * arrives whole in a moment), so its refusal is a clean error answer, never a broken one.
 */
export const HOLDBACK_BYTES = 64 * 1024;

/**
 * A proxied file's bytes as they arrive from the upstream, for the clients waiting on its fetch
 * (file-fetch.ts): `tap()` sits between the upstream and the store and writes each chunk to a
 * file before passing it on; each `reader()` reads that file from its start, at its own pace,
 * and waits at its end for more. So memory stays bounded per fetch whatever the file's size
 * (a chunk in the tap, a chunk or two per reader), a reader that joins late gets every byte
 * from the first, and a slow client stalls neither the others nor the store: the tap never
 * waits for a reader.
 *
 * Readers get the last bytes, and their end, only once `settle()` says the file may be served
 * (it matched what its upstream declares and the gate lets it through, or it was stored); a
 * failure breaks every reader off (destroyed with the error). The file is unlinked as soon as
 * it is opened: nothing is left behind by a crash, and its space is freed when the last reader
 * and the tap are done with it.
 */
export class FileSpool {
  private written = 0;
  private outcome: { ok: true } | { ok: false; err: Error } | undefined;
  private readers = 0;
  private writes = 0;
  private closed = false;
  private sentBytes = 0;
  private readonly waiting = new Set<() => void>();

  private constructor(
    private readonly fh: FileHandle,
    /** The length the upstream declared (Content-Length), if it did. */
    readonly size: number | undefined,
    private readonly holdback: number,
  ) {}

  /**
   * A spool in `dir` (a folder on disk: not a tmpfs, where it would be memory after all); `size`
   * the length the upstream declared, `holdback` the bytes kept from readers until the spool is settled.
   */
  static async create(dir: string, opts: { size?: number | undefined; holdback?: number } = {}): Promise<FileSpool> {
    const path = join(dir, `proxy-spool-${randomUUID()}`);
    const fh = await open(path, "w+", 0o600).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
      await mkdir(dir, { recursive: true });
      return open(path, "w+", 0o600);
    });
    try {
      await unlink(path);
    } catch (err) {
      await fh.close().catch(() => {});
      throw err;
    }
    return new FileSpool(fh, opts.size, opts.holdback ?? HOLDBACK_BYTES);
  }

  /** The most bytes any reader has been given. */
  get sent(): number {
    return this.sentBytes;
  }

  /**
   * The stream to put between the upstream and the store: each chunk written to the spool, then
   * passed on. A spool that cannot be written (a full disk) breaks its readers off and passes the
   * bytes on regardless: the store is not failed for it.
   */
  tap(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        if (this.outcome || this.closed) return cb(null, chunk);
        this.writes++;
        this.writeAll(chunk, this.written).then(
          () => {
            this.writes--;
            this.written += chunk.length;
            this.wake();
            this.release();
            cb(null, chunk);
          },
          (err: Error) => {
            this.writes--;
            this.settle(err);
            cb(null, chunk);
          },
        );
      },
    });
  }

  /** The fetch's outcome: the file may be served (readers get the rest and end) or failed (readers are broken off with `err`). Only the first counts. */
  settle(err?: Error): void {
    if (this.outcome) return;
    this.outcome = err ? { ok: false, err } : { ok: true };
    this.wake();
    this.release();
  }

  /**
   * The file from its first byte, as it arrives; undefined when the spool is gone or failed
   * (the caller then asks the fetch's own outcome: the stored file, or its error).
   */
  reader(): Readable | undefined {
    if (this.closed || this.outcome?.ok === false) return undefined;
    this.readers++;
    let position = 0;
    let reading: Promise<void> | undefined;
    const pump = (): void => {
      if (reading || out.destroyed) return;
      const outcome = this.outcome;
      if (outcome && !outcome.ok) return void out.destroy(outcome.err);
      const limit = outcome ? this.written : Math.max(0, this.written - this.holdback);
      if (position >= limit) {
        if (outcome) out.push(null);
        else this.waiting.add(pump);
        return;
      }
      const length = Math.min(READ_CHUNK, limit - position);
      const buf = Buffer.allocUnsafe(length);
      reading = this.fh.read(buf, 0, length, position).then(
        ({ bytesRead }) => {
          reading = undefined;
          if (out.destroyed) return;
          if (bytesRead === 0) return void out.destroy(new Error("the proxy's spool ended before the bytes it holds"));
          position += bytesRead;
          this.sentBytes = Math.max(this.sentBytes, position);
          if (out.push(bytesRead === length ? buf : buf.subarray(0, bytesRead))) pump();
        },
        (err: Error) => {
          reading = undefined;
          out.destroy(err);
        },
      );
    };
    const out = new Readable({
      highWaterMark: READ_CHUNK,
      read: pump,
      destroy: (err, cb) => {
        this.waiting.delete(pump);
        const done = () => {
          this.readers--;
          this.release();
          cb(err);
        };
        if (reading) void reading.finally(done);
        else done();
      },
    });
    return out;
  }

  private wake(): void {
    const woken = [...this.waiting];
    this.waiting.clear();
    for (const pump of woken) pump();
  }

  /** Closes the file once the fetch settled and neither a reader nor a write needs it. */
  private release(): void {
    if (this.closed || !this.outcome || this.readers > 0 || this.writes > 0) return;
    this.closed = true;
    void this.fh.close().catch(() => {});
  }

  private async writeAll(chunk: Buffer, at: number): Promise<void> {
    for (let done = 0; done < chunk.length; ) {
      const { bytesWritten } = await this.fh.write(chunk, done, chunk.length - done, at + done);
      done += bytesWritten;
    }
  }
}
