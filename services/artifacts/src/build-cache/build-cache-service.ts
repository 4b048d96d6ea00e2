import { Transform, type Readable } from "node:stream";
import { Counter, type Registry } from "prom-client";
import type { BlobStore, StagedBlob } from "@svc/blobs";
import { ServiceError, conflict, forbidden, invalid, notFound } from "@svc/contracts";
import type { BuildCacheRow, BuildCacheStore, EntryRow } from "./build-cache-store.js";

export interface BuildCacheDefaults {
  /** svc.build-cache.max-bytes */
  maxBytes: number;
  /** svc.build-cache.max-entry-bytes */
  maxEntryBytes: number;
}

/** A cache as the API shows it: its caps as they apply (its own, or the settings'). */
export interface BuildCacheView {
  name: string;
  maxBytes: number;
  maxEntryBytes: number;
  /** Whether each cap is the cache's own (false: it follows the setting). */
  ownMaxBytes: boolean;
  ownMaxEntryBytes: boolean;
  usedBytes: number;
  entries: number;
  created: string;
}

const READ_ONLY = "this server is read-only (svc.read-only): writes are refused";

/** Passes at most `limit` bytes; one more fails the stream with 413 (nothing is then stored). */
function capped(limit: number, tooLarge: () => Error): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > limit) return cb(tooLarge());
      cb(null, chunk);
    },
  });
}

/**
 * Build caches (docs/integration/build-caches.md): Gradle's and Bazel's HTTP caches, one
 * namespace per name. Content is a blob of the blob store (filesystem or S3) like any
 * artifact's; which key holds which blob, and when each was last used, is in Postgres, so every
 * artifacts node serves the same cache. Each cache has a size cap: a write that takes it over
 * evicts the least recently used entries, a read counting as a use at once. An evicted entry's
 * blob goes only when nothing else holds it (another cache's entry, a repository's path), under
 * the blob's lock, as every removal's does (`release`).
 */
export function buildCacheServiceFactory(deps: {
  store: BuildCacheStore;
  blobs: Pick<BlobStore, "stage" | "commit" | "discard" | "head" | "get" | "readOnly">;
  /** Removes each blob nothing references any more (the artifact service's reclaim, without grace). */
  release: (digests: readonly string[]) => Promise<unknown>;
  defaults: BuildCacheDefaults;
  registry: Registry;
}) {
  const { store, blobs } = deps;
  const meter = (name: string, help: string) => new Counter({ name, help, labelNames: ["cache"] as const, registers: [deps.registry] });
  const hits = meter("svc_build_cache_hits_total", "Build cache reads (GET) answered with an entry, per cache");
  const misses = meter("svc_build_cache_misses_total", "Build cache reads (GET) of a key the cache does not hold, per cache");
  const bytesIn = meter("svc_build_cache_bytes_in_total", "Bytes of the build cache entries stored, per cache");
  const bytesOut = meter("svc_build_cache_bytes_out_total", "Bytes of the build cache entries served (GET), per cache");
  const evictions = meter("svc_build_cache_evictions_total", "Build cache entries evicted (least recently used first) to keep a cache within its cap, per cache");

  const capOf = (row: Pick<BuildCacheRow, "maxBytes">) => row.maxBytes ?? deps.defaults.maxBytes;
  const entryCapOf = (row: Pick<BuildCacheRow, "maxBytes" | "maxEntryBytes">) => Math.min(row.maxEntryBytes ?? deps.defaults.maxEntryBytes, capOf(row));
  const view = (row: BuildCacheRow): BuildCacheView => ({
    name: row.name,
    maxBytes: capOf(row),
    maxEntryBytes: entryCapOf(row),
    ownMaxBytes: row.maxBytes !== null,
    ownMaxEntryBytes: row.maxEntryBytes !== null,
    usedBytes: row.usedBytes,
    entries: row.entries,
    created: row.created.toISOString(),
  });
  const writable = () => {
    if (blobs.readOnly) throw forbidden(READ_ONLY);
  };
  const release = async (digests: readonly string[]) => {
    // A failure leaves the blobs to the walker's reclaim.
    if (digests.length > 0) await deps.release([...new Set(digests)]).catch(() => undefined);
  };
  const evicted = async (cache: string, gone: readonly { sha256: string }[]) => {
    if (gone.length === 0) return;
    evictions.inc({ cache }, gone.length);
    await release(gone.map((g) => g.sha256));
  };
  const tooLarge = (cache: string, limit: number) => () =>
    new ServiceError("payload_too_large", `this entry is larger than build cache ${cache} takes (${limit} bytes, its maxEntryBytes or its cap): nothing was stored`);

  return {
    /**
     * The entry `key` of `cache`, its use recorded at once; undefined on a miss (no such cache or
     * entry, or its blob is gone). `count`: a GET, counted in the meters (a HEAD is not).
     */
    async read(cache: string, key: string, count: boolean): Promise<{ entry: EntryRow; body: Readable | undefined } | undefined> {
      // A read-only node (a mirror, maybe on a read replica of the database) records no use.
      const entry = blobs.readOnly ? await store.peek(cache, key) : await store.use(cache, key);
      const body = entry && count ? await blobs.get(entry.sha256) : undefined;
      const present = entry !== undefined && (count ? body !== undefined : (await blobs.head(entry.sha256)) !== undefined);
      // A blob a repair walk removed as corrupt: the entry is forgotten and the build tool builds.
      if (entry && !present && !blobs.readOnly) await store.forgetEntry(cache, key, entry.sha256);
      if (!present) {
        if (count) misses.inc({ cache });
        return undefined;
      }
      if (count) {
        hits.inc({ cache });
        bytesOut.inc({ cache }, entry.size);
      }
      return { entry, body };
    },

    /**
     * Stores `body` as the entry `key` of `cache` (made with the default caps when new), evicting
     * what the cap needs. 413 for an entry over the cache's limit, known from `declaredLength`
     * before anything is read when the client sent it; 400 for a Bazel `cas/` entry whose content
     * does not hash to its key. Either stores nothing.
     */
    async write(cache: string, key: string, body: Readable, declaredLength: number | undefined): Promise<{ created: boolean; size: number; sha256: string }> {
      writable();
      const row = (await store.find(cache)) ?? { maxBytes: null, maxEntryBytes: null };
      const limit = entryCapOf(row);
      if (declaredLength !== undefined && declaredLength > limit) throw tooLarge(cache, limit)();
      let staged: StagedBlob | undefined;
      let committed = false;
      try {
        staged = await blobs.stage(body, { through: [capped(limit, tooLarge(cache, limit))] });
        const s = staged;
        if (key.startsWith("cas/") && s.sha256 !== key.slice("cas/".length)) {
          throw invalid("content", `the content's SHA-256 is ${s.sha256}, not the ${key.slice("cas/".length)} its cas/ key names: nothing was stored`);
        }
        committed = (await blobs.commit(s)).created;
        const outcome = await store.put(cache, key, { sha256: s.sha256, size: s.size }, capOf, async () => {
          // Under the blob's lock: a reclaim that took it since the commit above is undone.
          if (!(await blobs.head(s.sha256))) await blobs.commit(s);
        });
        bytesIn.inc({ cache }, s.size);
        await evicted(cache, outcome.evicted);
        await release(outcome.replaced ? [outcome.replaced] : []);
        return { created: outcome.created, size: s.size, sha256: s.sha256 };
      } catch (err) {
        // A blob this write made and no entry took goes at once if nothing else holds it.
        if (staged && committed) await release([staged.sha256]);
        throw err;
      } finally {
        if (staged) await blobs.discard(staged);
      }
    },

    /** Removes an entry; false when there was none. */
    async removeEntry(cache: string, key: string): Promise<boolean> {
      writable();
      const sha256 = await store.removeEntry(cache, key);
      await release(sha256 ? [sha256] : []);
      return sha256 !== undefined;
    },

    async list(): Promise<BuildCacheView[]> {
      return (await store.list()).map(view);
    },

    async show(name: string): Promise<BuildCacheView> {
      const row = await store.find(name);
      if (!row) throw notFound(`no build cache named ${name}`);
      return view(row);
    },

    /** Creates a cache with its own caps (undefined: the settings'); 409 when it exists. */
    async create(name: string, caps: { maxBytes?: number; maxEntryBytes?: number }): Promise<BuildCacheView> {
      writable();
      const row = await store.create(name, { maxBytes: caps.maxBytes ?? null, maxEntryBytes: caps.maxEntryBytes ?? null });
      if (!row) throw conflict(`a build cache named ${name} exists already: change its caps with PATCH /api/build-caches/${name}`);
      return view(row);
    },

    /** Changes a cache's caps (null: back to the setting); a lowered cap evicts at once. */
    async update(name: string, caps: { maxBytes?: number | null; maxEntryBytes?: number | null }): Promise<BuildCacheView> {
      writable();
      const row = await store.update(name, caps);
      if (!row) throw notFound(`no build cache named ${name}`);
      await evicted(name, await store.trim(name, capOf));
      return this.show(name);
    },

    /** Removes a cache and every entry of it; 404 when there is none. */
    async removeCache(name: string): Promise<void> {
      writable();
      const blobsHeld = await store.remove(name);
      if (!blobsHeld) throw notFound(`no build cache named ${name}`);
      await release(blobsHeld);
    },
  };
}

export type BuildCacheService = ReturnType<typeof buildCacheServiceFactory>;
