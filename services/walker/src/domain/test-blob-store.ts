import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { BlobInfo, BlobStore, StagedBlob, StagedInfo } from "@svc/blobs";

/**
 * For the walker's tests: a BlobStore held in memory, with what a test needs to arrange a
 * store (a blob under a digest its bytes do not match, ages, staged leftovers). Not a backend.
 */
export function memoryBlobStore(now: () => number = Date.now) {
  const blobs = new Map<string, { bytes: Buffer; modified: Date }>();
  const staged = new Map<string, { bytes: Buffer; modified: Date }>();
  let next = 0;
  const digest = (b: Buffer) => createHash("sha256").update(b).digest("hex");
  const info = (sha256: string, b: { bytes: Buffer; modified: Date }): BlobInfo => ({ sha256, size: b.bytes.length, modified: b.modified });
  const toBuffer = async (source: Readable | Buffer) => {
    if (Buffer.isBuffer(source)) return source;
    const chunks: Buffer[] = [];
    for await (const c of source) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  const store: BlobStore = {
    kind: "memory",
    readOnly: false,
    async stage(source) {
      const bytes = await toBuffer(source);
      const name = `upload-${++next}`;
      staged.set(name, { bytes, modified: new Date(now()) });
      return { name, sha256: digest(bytes), size: bytes.length };
    },
    async commit(s: StagedBlob) {
      const copy = staged.get(s.name)!;
      const had = blobs.get(s.sha256);
      blobs.set(s.sha256, { bytes: had?.bytes ?? copy.bytes, modified: new Date(now()) });
      return { created: !had };
    },
    async discard(s) {
      staged.delete(s.name);
    },
    async put(source) {
      const s = await store.stage(source);
      const { created } = await store.commit(s);
      await store.discard(s);
      return { sha256: s.sha256, size: s.size, created };
    },
    async head(sha256) {
      const b = blobs.get(sha256);
      return b && info(sha256, b);
    },
    async get(sha256) {
      const b = blobs.get(sha256);
      return b && Readable.from([b.bytes]);
    },
    async delete(sha256) {
      return blobs.delete(sha256);
    },
    async list({ after, limit }) {
      return [...blobs.keys()]
        .sort()
        .filter((k) => after === undefined || k > after)
        .slice(0, limit)
        .map((k) => info(k, blobs.get(k)!));
    },
    async listStaged({ after, limit }): Promise<StagedInfo[]> {
      return [...staged.keys()]
        .sort()
        .filter((k) => after === undefined || k > after)
        .slice(0, limit)
        .map((name) => ({ name, size: staged.get(name)!.bytes.length, modified: staged.get(name)!.modified }));
    },
    async deleteStaged(name, olderThanMs) {
      const s = staged.get(name);
      if (!s || now() - s.modified.getTime() < olderThanMs) return undefined;
      staged.delete(name);
      return s.bytes.length;
    },
  };
  return {
    store,
    /** Arranges a blob: its bytes under their digest, or under `as` (a corrupt blob), `ageMs` old. */
    plant(content: string, o: { ageMs?: number; as?: string } = {}): string {
      const bytes = Buffer.from(content);
      const sha256 = o.as ?? digest(bytes);
      blobs.set(sha256, { bytes, modified: new Date(now() - (o.ageMs ?? 0)) });
      return sha256;
    },
    /** Arranges a staged leftover `ageMs` old. */
    stageLeftover(name: string, content: string, ageMs: number): void {
      staged.set(name, { bytes: Buffer.from(content), modified: new Date(now() - ageMs) });
    },
    has: (sha256: string) => blobs.has(sha256),
    hasStaged: (name: string) => staged.has(name),
  };
}
