import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip as gzipCallback } from "node:zlib";
import type { FastifyBaseLogger } from "fastify";
import pg from "pg";
import { forbidden, notFound } from "@svc/contracts";
import { CooldownRefusal, type ScreenVersions, type TooYoung } from "../format.js";
import { badGateway, READ_ONLY_FETCH, type FileSource, type LiveFile, type Upstreams } from "../../proxy/file-fetch.js";
import { revalidationFactory } from "../../proxy/revalidation.js";
import { SingleFlight } from "../../proxy/single-flight.js";
import { staleHeaders } from "../../proxy/upstream-health.js";
import { UpstreamUnreachable, type UpstreamAnswer } from "../../proxy/upstream-client.js";
import { SCHEMA } from "../../store/schema.js";
import { COMPRESS_FROM_BYTES, visibleTags } from "./npm-document-cache.js";
import { ABBREVIATED_FIELDS, tarballFile, tarballPath } from "./npm-documents.js";
import { rewriteTarballUrls, sriDigests, type UpstreamPackument } from "./npm-proxy.js";
import type { NpmPackages } from "./npm-export.js";

/** How long a definite miss (the upstream answered 404) is believed before the upstream is asked again. */
export const MISS_TTL_MS = 30_000;

export interface NpmProxyDeps {
  pool: pg.Pool;
  /** Whether a repository is a proxy one. */
  isProxy: (repository: string) => boolean;
  /** The upstreams asked and the files fetched once (proxy/file-fetch.ts). */
  upstreams: Upstreams;
  /** svc.proxy.metadata-ttl and svc.proxy.metadata-stale-while-revalidate as they are now. */
  settings: () => { metadataTtlMs: number; metadataStaleMs: number };
  /** The screening gate's verdicts on a package's versions before they are fetched: BLOCK and HOLD hide them from the packument. */
  screenVersions?: ScreenVersions;
  /** The cooldown: versions published upstream too recently (the packument's `time`) are neither listed nor fetched. */
  tooYoung?: TooYoung;
  readOnly: boolean;
  log: FastifyBaseLogger;
  now?: () => number;
}

/** A stored packument row as this process has it: the upstream's document parsed (null: a remembered miss). */
interface CachedRow {
  doc: UpstreamPackument | null;
  etag: string | null;
  fetchedAt: Date;
}

/** A packument served: its body and entity tag, built once per stored version and visible set. */
interface Built {
  stamp: string;
  body: string;
  etag: string;
  /** The body gzip-compressed, made on the first read that accepts it (COMPRESS_FROM_BYTES and more) and kept beside it. */
  gzipped?: Promise<Buffer>;
}

/** A packument kept in memory: its stored row (fetched_at names its version) and the documents built from it. */
interface Kept {
  row: CachedRow;
  /** The stored document's length: what the entry is counted as, beside its built bodies. */
  size: number;
  built: Map<string, Built>;
}

/** Bytes of packuments (stored text and built bodies) kept in memory per process; larger ones are read and built per request. */
export const KEPT_BYTES = 64 * 1024 * 1024;
/** What an entry counts as at least (its key, row and map slot). */
const ENTRY_BYTES = 512;

/** A packument as this proxy has it: the upstream's document, when it was fetched, and whether it is served stale (the upstream failing). */
export interface ProxiedPackument {
  doc: UpstreamPackument;
  fetchedAt: Date;
  stale: boolean;
}

const gzip = promisify(gzipCallback);
const upstreamName = (name: string) => (name.startsWith("@") ? name.replace("/", "%2f") : name);
const joinUrl = (base: string, rest: string) => `${base.replace(/\/+$/, "")}/${rest}`;

/**
 * The npm side of a proxy repository (docs/integration/npm.md, "Proxy repositories"): packuments fetched from
 * the upstream on a miss and kept in Postgres for svc.proxy.metadata-ttl, then revalidated with
 * If-None-Match; served stale (Warning 110, Age) while the upstream fails; a definite 404 kept
 * as a miss for 30 s, a failure never. Tarballs fetched on first request, checked against the
 * packument's integrity, stored through the artifact service (so the screening gate sees them as
 * it sees a publish) and then served as files, never fetched again. One fetch per tarball however
 * many ask at once: single-flight in the process, a Postgres advisory lock across nodes.
 */
export function npmProxyFactory(deps: NpmProxyDeps) {
  const now = deps.now ?? Date.now;
  const T = `${pg.escapeIdentifier(SCHEMA)}.npm_proxy_documents`;
  const documents = new SingleFlight<ProxiedPackument | undefined>();
  const { healthOf, upstream } = deps.upstreams;
  const { isProxy } = deps;
  const revalidate = revalidationFactory({ flights: documents, upstreams: deps.upstreams, staleMs: () => deps.settings().metadataStaleMs, now, log: deps.log });
  const ask = (repository: string, url: string, headers: Record<string, string>): Promise<UpstreamAnswer> => deps.upstreams.get(repository, url, headers, 64 * 1024 * 1024);

  // The packuments read lately, parsed, with the documents served from them (insertion order is
  // recency). Each read still asks Postgres for the row's fetched_at, and the document comes over
  // only when it differs from the one kept: a packument another node fetched or revalidated is
  // seen on the next read, and a kept one is never parsed, filtered or serialised again.
  const kept = new Map<string, Kept>();
  let keptBytes = 0;
  const keyOf = (repository: string, name: string) => `${repository}\0${name}`;
  // A compressed body is counted at the plain one's size again: a bound, whatever it compresses to.
  const builtSize = (b: Built) => b.body.length * (b.gzipped ? 2 : 1);
  const sizeOf = (k: Kept) => k.size + [...k.built.values()].reduce((a, b) => a + builtSize(b), 0);
  const forget = (key: string) => {
    const k = kept.get(key);
    if (!k) return;
    kept.delete(key);
    keptBytes -= sizeOf(k);
  };
  const evict = () => {
    for (const oldest of kept.keys()) {
      if (keptBytes <= KEPT_BYTES) break;
      forget(oldest);
    }
  };
  const keep = (repository: string, name: string, row: CachedRow, text: number): CachedRow => {
    const key = keyOf(repository, name);
    forget(key);
    // A remembered miss has no text, but an entry of its own: counted, so names asked at random cannot grow the map unbounded.
    const size = Math.max(text, ENTRY_BYTES);
    if (size > KEPT_BYTES) return row;
    kept.set(key, { row, size, built: new Map() });
    keptBytes += size;
    evict();
    return row;
  };

  const read = async (repository: string, name: string): Promise<CachedRow | undefined> => {
    const key = keyOf(repository, name);
    const mine = kept.get(key);
    if (mine && writing.has(key)) return mine.row;
    const r = await deps.pool.query<{ document: string | null; missing: boolean; etag: string | null; fetched_at: Date }>(
      `select fetched_at, etag, document is null as missing, case when fetched_at = $3::timestamptz then null else document end as document from ${T} where repository = $1 and name = $2`,
      [repository, name, mine?.row.fetchedAt ?? null],
    );
    const row = r.rows[0];
    if (!row) {
      forget(key);
      return undefined;
    }
    if (mine && row.fetched_at.getTime() === mine.row.fetchedAt.getTime() && row.document === null) {
      kept.delete(key);
      kept.set(key, mine);
      return mine.row;
    }
    const doc = row.missing || row.document === null ? null : (JSON.parse(row.document) as UpstreamPackument);
    return keep(repository, name, { doc, etag: row.etag, fetchedAt: row.fetched_at }, row.document?.length ?? 0);
  };
  // Rows written after their answer, by key: until the write lands, a read takes the copy kept here.
  const writing = new Map<string, Promise<void>>();
  /**
   * Stores what the upstream answered and keeps it here, answering without waiting for the
   * write (the upstream still has it: a write that fails is logged and the next read asks
   * again). The revalidation's lock is held until it lands (`settling`).
   */
  const write = (repository: string, name: string, doc: UpstreamPackument | null, document: string | null, etag: string | null): CachedRow => {
    const at = new Date(now());
    const key = keyOf(repository, name);
    const row = keep(repository, name, { doc, etag, fetchedAt: at }, document?.length ?? 0);
    const written = deps.pool
      .query(
        `insert into ${T} (repository, name, document, etag, fetched_at) values ($1, $2, $3, $4, $5)
       on conflict (repository, name) do update set document = excluded.document, etag = excluded.etag, fetched_at = excluded.fetched_at`,
        [repository, name, document, etag, at],
      )
      .then(
        () => {},
        (err: unknown) => {
          forget(key);
          deps.log.warn({ err, repository, package: name }, "npm proxy: could not store a packument fetched from the upstream; the next read asks the upstream again");
        },
      )
      .finally(() => {
        if (writing.get(key) === written) writing.delete(key);
      });
    writing.set(key, written);
    return row;
  };
  /** A 304: the kept copy is current again (as of `at`), its built documents still good. */
  const touch = async (repository: string, name: string): Promise<Date> => {
    const at = new Date(now());
    await deps.pool.query(`update ${T} set fetched_at = $3 where repository = $1 and name = $2`, [repository, name, at]);
    const k = kept.get(keyOf(repository, name));
    if (k) k.row = { ...k.row, fetchedAt: at };
    return at;
  };
  const parsed = (row: CachedRow, stale: boolean, fetchedAt = row.fetchedAt): ProxiedPackument | undefined => (row.doc === null ? undefined : { doc: row.doc, fetchedAt, stale });

  /** The cached copy, served stale because the upstream failed (counted). */
  const staleCopy = (repository: string, row: CachedRow): ProxiedPackument | undefined => {
    deps.upstreams.servedStale(repository);
    return parsed(row, true);
  };

  /** The upstream failed: the cached copy, marked stale, or a 502 when there is none. */
  const failed = (repository: string, name: string, row: CachedRow | undefined, why: string): ProxiedPackument | undefined => {
    healthOf(repository).failed();
    deps.log.warn({ repository, package: name, why }, "npm proxy: the upstream failed; serving the cached packument if there is one");
    if (row?.doc) return staleCopy(repository, row);
    throw badGateway(`the upstream of ${repository} did not answer for ${name} and no copy is cached: ${why}`);
  };

  const refresh = async (repository: string, name: string, row: CachedRow | undefined): Promise<ProxiedPackument | undefined> => {
    const u = upstream(repository);
    let answer: UpstreamAnswer;
    try {
      answer = await ask(repository, joinUrl(u.url, upstreamName(name)), { accept: "application/json", ...(row?.doc && row.etag ? { "if-none-match": row.etag } : {}) });
    } catch (err) {
      if (!(err instanceof UpstreamUnreachable)) throw err;
      return failed(repository, name, row, err.message);
    }
    if (answer.status === 304 && row?.doc) {
      healthOf(repository).succeeded();
      return parsed(row, false, await touch(repository, name));
    }
    if (answer.status === 200) {
      const text = answer.body.toString("utf8");
      let doc: UpstreamPackument;
      try {
        doc = JSON.parse(text) as UpstreamPackument;
      } catch {
        return failed(repository, name, row, "the upstream answered a packument that is not JSON");
      }
      if (typeof doc !== "object" || doc === null || doc.name !== name) return failed(repository, name, row, `the upstream answered a document that is not ${name}'s`);
      healthOf(repository).succeeded();
      const etag = typeof answer.headers.etag === "string" ? answer.headers.etag : null;
      // Stored as the upstream answered it (JSON checked above), and kept parsed.
      return parsed(write(repository, name, doc, text, etag), false);
    }
    if (answer.status === 404 || answer.status === 410) {
      healthOf(repository).succeeded();
      write(repository, name, null, null, null);
      return undefined;
    }
    if (answer.status === 401 || answer.status === 403) {
      deps.log.error({ repository, package: name, status: answer.status }, "npm proxy: the upstream refused this server's credentials");
      if (row?.doc) return staleCopy(repository, row);
      throw badGateway(`the upstream of ${repository} refused to answer for ${name} (${answer.status}): check the repository's upstream credentials`);
    }
    return failed(repository, name, row, `the upstream answered ${answer.status}`);
  };

  /** A package's packument through the proxy: cached, fetched, revalidated or served stale; undefined: the upstream has no such package. */
  const packument = async (repository: string, name: string): Promise<ProxiedPackument | undefined> => {
    const row = await read(repository, name);
    const ttl = row?.doc === null ? MISS_TTL_MS : deps.settings().metadataTtlMs;
    if (row && now() - row.fetchedAt.getTime() < ttl) return parsed(row, false);
    if (deps.readOnly) {
      if (row) return parsed(row, false);
      throw forbidden(READ_ONLY_FETCH);
    }
    if (!healthOf(repository).mayAsk()) {
      if (row?.doc) return staleCopy(repository, row);
      throw badGateway(`the upstream of ${repository} is marked down after repeated failures and no copy of ${name} is cached: it is asked again after a backoff`);
    }
    return revalidate({
      row,
      key: ["npm", repository, name],
      reread: () => read(repository, name),
      ttlOf: (r) => (r.doc === null ? MISS_TTL_MS : deps.settings().metadataTtlMs),
      hasCopy: (r) => r.doc !== null,
      answer: parsed,
      refresh: (r) => refresh(repository, name, r),
      about: { repository, package: name },
      settling: () => writing.get(keyOf(repository, name)),
    });
  };

  /** The versions of `versions` the cooldown keeps back, with why: their upstream publish times from the packument's `time`. */
  const young = async (repository: string, doc: UpstreamPackument, versions: readonly string[]): Promise<ReadonlyMap<string, string>> => {
    if (!deps.tooYoung) return new Map();
    const published = new Map<string, Date | undefined>();
    for (const v of versions) {
      const t = doc.time?.[v];
      published.set(v, typeof t === "string" ? new Date(t) : undefined);
    }
    return deps.tooYoung(repository, doc.name, published);
  };

  /** The versions a client may see: neither held here nor refused or held by the gate if fetched, nor kept back by the cooldown. */
  const visibleVersions = async (repository: string, name: string, doc: UpstreamPackument, versions: string[]): Promise<Set<string>> => {
    // Asked at once: each is a round trip to Postgres, and none depends on another.
    const [held, verdicts, tooYoung] = await Promise.all([
      deps.pool.query<{ path: string }>(
        `select path from ${pg.escapeIdentifier(SCHEMA)}.artifacts where repository = $1 and held_reason is not null and (path collate "C") >= ($2 collate "C") and (path collate "C") < ($3 collate "C")`,
        [repository, `${name}/-/`, `${name}/-0`],
      ),
      deps.screenVersions ? deps.screenVersions(repository, name, versions) : new Map<string, { action: string }>(),
      young(repository, doc, versions),
    ]);
    const heldPaths = new Set(held.rows.map((r) => r.path));
    const out = new Set<string>();
    for (const v of versions) {
      const action = verdicts.get(v)?.action;
      if (!heldPaths.has(tarballPath(name, v)) && action !== "BLOCK" && action !== "HOLD" && !tooYoung.has(v)) out.add(v);
    }
    return out;
  };

  /** Where a tarball comes from and its declared digests (the packument's, fetched or revalidated if need be). */
  const tarballSource = async (repository: string, name: string, path: string): Promise<FileSource | undefined> => {
    const p = await packument(repository, name);
    const version = p ? Object.keys(p.doc.versions ?? {}).find((v) => tarballFile(name, v) === path.slice(path.lastIndexOf("/") + 1)) : undefined;
    if (!p || version === undefined) throw notFound(`no tarball ${path} in ${repository} or its upstream`);
    const why = (await young(repository, p.doc, [version])).get(version);
    if (why) throw new CooldownRefusal("forbidden", why, { repository, path, name, version });
    const dist = p.doc.versions![version]!.dist ?? {};
    const u = upstream(repository);
    // The packument's own tarball URL when it is on the upstream's origin (its credentials go
    // nowhere else); else the registry layout under the upstream URL: an upstream behind another
    // proxy names its own address in dist.tarball, which this server may not reach.
    const declared = typeof dist.tarball === "string" && dist.tarball !== "" ? new URL(dist.tarball, u.url) : undefined;
    const url = declared && declared.origin === new URL(u.url).origin ? declared.href : joinUrl(u.url, path);
    const digests = sriDigests(typeof dist.integrity === "string" ? dist.integrity : undefined, typeof dist.shasum === "string" ? dist.shasum : undefined);
    if (!digests) {
      deps.log.error({ repository, path }, "npm proxy: the upstream declares no integrity or shasum for a tarball; refused, nothing fetched");
      throw badGateway(`${name}@${version} from the upstream of ${repository} was refused: the upstream declares no integrity or shasum for this tarball`);
    }
    return { url, digests, what: `${name}@${version}` };
  };

  /** A proxy repository's packages as an export reads them: the packuments it holds, with the versions whose tarballs it stored. */
  const packages: NpmPackages = {
    reads: isProxy,
    async names(repository, after, limit) {
      const r = await deps.pool.query<{ name: string }>(
        `select name from ${T} where repository = $1 and document is not null and ($2::text is null or (name collate "C") > ($2 collate "C")) order by name collate "C" limit $3`,
        [repository, after ?? null, limit],
      );
      return r.rows.map((row) => row.name);
    },
    async read(repository, name) {
      const row = await read(repository, name);
      const p = row ? parsed(row, false) : undefined;
      if (!p) return undefined;
      const versions = Object.keys(p.doc.versions ?? {});
      const stored = await deps.pool.query<{ path: string; updated_at: Date }>(
        `select path, updated_at from ${pg.escapeIdentifier(SCHEMA)}.artifacts where repository = $1 and path = any($2::text[])`,
        [repository, versions.map((v) => tarballPath(name, v))],
      );
      const at = new Map(stored.rows.map((r) => [r.path, r.updated_at]));
      const rows = versions.flatMap((v) => {
        const tarball = tarballPath(name, v);
        const fetched = at.get(tarball);
        if (!fetched) return [];
        const published = p.doc.time?.[v];
        return [{ version: v, manifest: p.doc.versions![v]! as Record<string, unknown>, tarball, published: published && !Number.isNaN(Date.parse(published)) ? new Date(published) : fetched }];
      });
      return { distTags: p.doc["dist-tags"] ?? {}, versions: rows };
    },
  };

  return {
    packument,
    packages,

    /**
     * The packument served: versions held or refused by the gate or too young for the cooldown left out (dist-tags repaired so
     * `latest` names a listed version), tarball URLs rewritten to `base`, abbreviated on request;
     * with an ETag of its body and, when stale, Warning and Age. A body of COMPRESS_FROM_BYTES or
     * more comes with `gzipped`: the same body compressed, made once and kept beside it.
     */
    async document(repository: string, name: string, base: string, small: boolean): Promise<{ body: string; etag: string; headers: Record<string, string>; gzipped?: () => Promise<Buffer> } | undefined> {
      const p = await packument(repository, name);
      if (!p) return undefined;
      const all = Object.keys(p.doc.versions ?? {});
      const shown = await visibleVersions(repository, name, p.doc, all);
      const headers = p.stale ? staleHeaders(p.fetchedAt.getTime(), now()) : {};
      // Built once per stored version, address, kind and set of versions left out; then served as built.
      const k = kept.get(keyOf(repository, name));
      const mine = k && k.row.doc === p.doc ? k : undefined;
      const which = `${small ? "abbreviated" : "full"}\n${base}`;
      // The abbreviated document's `modified` falls back on fetched_at, so a revalidated packument is built again.
      const stamp = `${p.fetchedAt.getTime()}\n${all.filter((v) => !shown.has(v)).join("\n")}`;
      const hit = mine?.built.get(which);
      let served: Built;
      if (hit && hit.stamp === stamp) served = hit;
      else {
        served = { stamp, ...build(p, name, base, small, shown) };
        if (mine && kept.get(keyOf(repository, name)) === mine) {
          keptBytes -= hit ? builtSize(hit) : 0;
          mine.built.set(which, served);
          keptBytes += builtSize(served);
          evict();
        }
      }
      if (served.body.length < COMPRESS_FROM_BYTES) return { body: served.body, etag: served.etag, headers };
      // Compressed once per built body, on the first read that takes gzip (concurrent reads share it), counted against the memory kept.
      const gzipped = () => {
        if (!served.gzipped) {
          served.gzipped = gzip(served.body);
          if (mine?.built.get(which) === served) {
            keptBytes += served.body.length;
            evict();
          }
        }
        return served.gzipped;
      };
      return { body: served.body, etag: served.etag, headers, gzipped };
    },

    /**
     * Makes sure a tarball is stored before it is served as a file: fetched from the upstream on
     * its first request, once however many ask (in this process and on every node); with `live`,
     * maybe the tarball as it arrives (Upstreams.file).
     */
    tarball(repository: string, name: string, path: string, opts?: { live?: boolean }): Promise<LiveFile | undefined> {
      return deps.upstreams.file(repository, path, () => tarballSource(repository, name, path), opts);
    },

    /** What is kept in memory, for tests and metrics. */
    stats: () => ({ packuments: kept.size, bytes: keptBytes }),
  };
}

/** The packument served from a proxied one: the versions `shown` only, tarball URLs under `base`, abbreviated when `small`; with an ETag of its body. */
function build(p: ProxiedPackument, name: string, base: string, small: boolean, shown: ReadonlySet<string>): { body: string; etag: string } {
  const rewritten = rewriteTarballUrls(p.doc, base);
  const versions = Object.fromEntries(Object.entries(rewritten.versions ?? {}).filter(([v]) => shown.has(v)));
  const tags = visibleTags(p.doc["dist-tags"] ?? {}, Object.keys(versions));
  let out: Record<string, unknown>;
  if (small) {
    const smallVersions: Record<string, unknown> = {};
    for (const [v, m] of Object.entries(versions)) smallVersions[v] = Object.fromEntries(ABBREVIATED_FIELDS.flatMap((f) => (m[f] !== undefined ? [[f, m[f]]] : [])));
    out = { name, modified: p.doc.time?.modified ?? p.fetchedAt.toISOString(), "dist-tags": tags, versions: smallVersions };
  } else {
    const time = p.doc.time ? Object.fromEntries(Object.entries(p.doc.time).filter(([k]) => k === "created" || k === "modified" || shown.has(k))) : undefined;
    const { _attachments: _a, ...rest } = rewritten;
    out = { ...rest, "dist-tags": tags, versions, ...(time ? { time } : {}) };
  }
  const body = JSON.stringify(out);
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { body, etag };
}
export type NpmProxy = ReturnType<typeof npmProxyFactory>;
