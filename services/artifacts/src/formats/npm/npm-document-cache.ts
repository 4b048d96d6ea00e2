import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip as gzipCallback } from "node:zlib";
import semver from "semver";
import type { NpmPackageRow, NpmStore } from "./npm-store.js";
import { abbreviated, packument } from "./npm-documents.js";
import type { Preconditions } from "../../domain/upload-checks.js";

export type NpmDocumentKind = "full" | "abbreviated";

/**
 * Part of every document's entity tag: raise it when the documents' shape changes (a field
 * added or dropped), so a client's copy served by an older release is not confirmed as current.
 */
const DOCUMENT_FORMAT = 2;

const gzip = promisify(gzipCallback);

/**
 * Documents smaller than this are served as they are: compressing a few packets' worth saves
 * the client nothing it would notice and costs it an inflate per document.
 */
export const COMPRESS_FROM_BYTES = 8 * 1024;

export interface NpmDocument {
  /**
   * A weak entity tag naming the package's revision, the kind of document and its address. The
   * same for the gzip-encoded and the plain body (RFC 9110 8.8.1: a weak tag may name
   * representations that differ only in their encoding, as nginx's do).
   */
  etag: string;
  /** The serialised document; undefined when the caller's copy is current (its If-None-Match names `etag`). */
  body: Buffer | undefined;
  /** "gzip" when `body` is the document compressed (asked for, and worth it); undefined for the plain JSON. */
  encoding?: "gzip";
}

/**
 * Weak: two documents built under one revision may differ (see `build`). It names what the
 * document is built from, so a revalidation is answered without building the document.
 */
function documentTag(kind: NpmDocumentKind, stamp: string, base: string): string {
  const hash = createHash("sha256").update(`${DOCUMENT_FORMAT}\n${kind}\n${stamp}\n${base}`).digest("base64url").slice(0, 27);
  return `W/"${hash}"`;
}

/** If-None-Match, compared weakly (RFC 9110 13.1.2): `*`, or any tag equal to ours without the weak marker. */
const current = (ifNoneMatch: Preconditions["ifNoneMatch"], etag: string) =>
  ifNoneMatch === "*" || (ifNoneMatch !== undefined && ifNoneMatch.includes(etag.slice(2)));

export interface NpmDocumentCacheDeps {
  store: Pick<NpmStore, "findPackage" | "documentVersions">;
  /** Bytes of serialised documents kept; a document larger than this is built and not kept. */
  maxBytes?: number;
}

interface Entry {
  stamp: string;
  body: Buffer;
  /** The body gzip-compressed, made on the first read that accepts it and kept beside it. */
  gzipped?: Buffer;
}

/**
 * Dist-tags that name only versions the document lists: a held version is not listed (the
 * screening gate), so a tag on it goes and `latest` moves to the newest listed release (the
 * newest prerelease when there is no release), and `npm install` picks a version it may download.
 */
export function visibleTags(tags: Record<string, string>, listed: readonly string[]): Record<string, string> {
  const present = new Set(listed);
  const out = Object.fromEntries(Object.entries(tags).filter(([, v]) => present.has(v)));
  if (out.latest === undefined && listed.length > 0) {
    const valid = listed.filter((v) => semver.valid(v) !== null);
    const releases = valid.filter((v) => semver.prerelease(v) === null);
    const newest = (releases.length > 0 ? releases : valid).sort(semver.rcompare)[0];
    out.latest = newest ?? listed[listed.length - 1]!;
  }
  return out;
}

/**
 * A package's document, serialised once per change instead of once per request: reading the
 * version rows and serialising them cost milliseconds per request on a package of hundreds of
 * versions (and a 2,000-version document is several MB). Each read still asks Postgres for the
 * package row, whose revision is raised in the same transaction as every change, so a document
 * is served only while it matches that revision: a change made through any replica is seen by
 * every replica on its next read. Concurrent reads that miss share one build.
 *
 * A client that accepts gzip (npm, pnpm and yarn all do) gets a large document compressed, once
 * per change as well: a 2,000-version document of about 5 MB is a few hundred KB gzipped, so
 * twenty clients fetching it at once move a tenth of the bytes through the gateway and the
 * network, and none compresses it again. Concurrent reads share one compression too.
 */
export function npmDocumentCacheFactory(deps: NpmDocumentCacheDeps) {
  const { store } = deps;
  const maxBytes = deps.maxBytes ?? 64 * 1024 * 1024;
  // Insertion order is recency: a hit moves its entry to the end, eviction takes the front.
  const entries = new Map<string, Entry>();
  const building = new Map<string, Promise<Buffer>>();
  const compressing = new Map<string, Promise<Buffer>>();
  let bytes = 0;

  const sizeOf = (e: Entry) => e.body.length + (e.gzipped?.length ?? 0);

  const drop = (key: string) => {
    const e = entries.get(key);
    if (!e) return;
    entries.delete(key);
    bytes -= sizeOf(e);
  };

  const evict = () => {
    for (const oldest of entries.keys()) {
      if (bytes <= maxBytes) break;
      drop(oldest);
    }
  };

  const keep = (key: string, entry: Entry) => {
    drop(key);
    if (entry.body.length > maxBytes) return;
    entries.set(key, entry);
    bytes += sizeOf(entry);
    evict();
  };

  /** Keeps the compressed body beside the plain one, if the entry is still the one it was made from. */
  const keepGzipped = (key: string, stamp: string, gzipped: Buffer) => {
    const e = entries.get(key);
    if (!e || e.stamp !== stamp || e.gzipped) return;
    e.gzipped = gzipped;
    bytes += gzipped.length;
    evict();
  };

  /** One `make()` per flight at a time: the reads arriving meanwhile share it, and `done` keeps what it made. */
  const shared = (flights: Map<string, Promise<Buffer>>, flight: string, make: () => Promise<Buffer>, done: (made: Buffer) => void): Promise<Buffer> => {
    let pending = flights.get(flight);
    if (!pending) {
      pending = make().finally(() => flights.delete(flight));
      flights.set(flight, pending);
      pending.then(done).catch(() => {});
    }
    return pending;
  };

  // The version rows are read after the package row: a change committed in between lands in a
  // document kept under the older revision, which the next read (seeing the newer one) replaces.
  // A document is never older than the revision it is kept under.
  const build = async (kind: NpmDocumentKind, repository: string, name: string, pkg: NpmPackageRow, base: string): Promise<Buffer> => {
    // The readme is the full document's alone (the latest version's, once for the package).
    const { versions, readme } = await store.documentVersions(repository, name, kind === "full" ? pkg.distTags.latest : undefined);
    const listed = { ...pkg, distTags: visibleTags(pkg.distTags, versions.map((v) => v.version)) };
    const doc = kind === "full" ? packument(name, listed, versions, base, readme) : abbreviated(name, listed, versions, base);
    return Buffer.from(JSON.stringify(doc));
  };

  return {
    /**
     * The serialised document of a package, with its tarball URLs under `base`, and its entity
     * tag; without the body when `ifNoneMatch` names that tag. Undefined when there is no such package.
     * With `acceptsGzip`, a document of COMPRESS_FROM_BYTES or more comes gzip-compressed.
     */
    async get(
      kind: NpmDocumentKind,
      repository: string,
      name: string,
      base: string,
      ifNoneMatch?: Preconditions["ifNoneMatch"],
      acceptsGzip = false,
    ): Promise<NpmDocument | undefined> {
      const pkg = await store.findPackage(repository, name);
      if (!pkg) return undefined;
      // A package removed and published again starts over at the first revision: its creation time tells them apart.
      const stamp = `${pkg.rev}:${pkg.created.getTime()}:${pkg.modified.getTime()}`;
      const etag = documentTag(kind, stamp, base);
      if (current(ifNoneMatch, etag)) return { etag, body: undefined };
      const key = `${kind}\n${repository}\n${name}\n${base}`;
      const hit = entries.get(key);
      const kept = hit?.stamp === stamp ? hit : undefined;
      if (kept) {
        entries.delete(key);
        entries.set(key, kept);
      }
      const flight = `${key}\n${stamp}`;
      const body = kept?.body ?? (await shared(building, flight, () => build(kind, repository, name, pkg, base), (b) => keep(key, { stamp, body: b })));
      if (!acceptsGzip || body.length < COMPRESS_FROM_BYTES) return { etag, body };
      const gzipped = kept?.gzipped ?? (await shared(compressing, flight, () => gzip(body), (z) => keepGzipped(key, stamp, z)));
      return { etag, body: gzipped, encoding: "gzip" };
    },

    /** What is kept, for tests and metrics. */
    stats: () => ({ documents: entries.size, bytes }),
  };
}
export type NpmDocumentCache = ReturnType<typeof npmDocumentCacheFactory>;
