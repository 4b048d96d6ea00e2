import type { FastifyBaseLogger } from "fastify";
import pg from "pg";
import { forbidden } from "@svc/contracts";
import { SCHEMA } from "../store/schema.js";
import { badGateway, READ_ONLY_FETCH, type Upstreams } from "./file-fetch.js";
import { revalidationFactory } from "./revalidation.js";
import { SingleFlight } from "./single-flight.js";
import { UpstreamUnreachable, type UpstreamAnswer } from "./upstream-client.js";

/** How long a definite miss (the upstream answered 404 or 410) is believed before the upstream is asked again. */
export const DOCUMENT_MISS_TTL_MS = 30_000;
/** The largest metadata document taken from an upstream. */
const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;

/** A metadata document as a proxy repository has it: the upstream's text, when it was fetched, whether it is served stale (the upstream failing). */
export interface ProxiedDocument {
  body: string;
  fetchedAt: Date;
  stale: boolean;
}

export interface ProxiedDocumentsDeps {
  pool: pg.Pool;
  upstreams: Upstreams;
  /** svc.proxy.metadata-ttl and svc.proxy.metadata-stale-while-revalidate as they are now. */
  settings: () => { metadataTtlMs: number; metadataStaleMs: number };
  readOnly: boolean;
  log: FastifyBaseLogger;
  now?: () => number;
}

/** How one kind of document is asked for and judged (a PyPI project page, a maven-metadata.xml). */
export interface DocumentKind {
  /** The Accept header sent. */
  accept: string;
  /** Why an answer is not a document of this kind (it is then a failure, never cached); undefined: it is. */
  invalid?: (body: string) => string | undefined;
}

interface Row {
  body: string | null;
  etag: string | null;
  lastModified: string | null;
  fetchedAt: Date;
}

/**
 * The metadata documents of proxy repositories (PyPI project pages, Maven metadata; npm keeps its
 * packuments in a table of its own), kept in Postgres by repository and key for
 * svc.proxy.metadata-ttl, then revalidated with If-None-Match / If-Modified-Since: in the
 * background while the cached copy is answered (stale-while-revalidate, for
 * svc.proxy.metadata-stale-while-revalidate after the time to live), before answering after
 * that; served stale while the upstream fails, times out or rate-limits (and while it is marked down); a definite
 * 404 remembered for 30 s, a failure never. One fetch per document in a process at a time.
 */
export function proxiedDocumentsFactory(deps: ProxiedDocumentsDeps) {
  const now = deps.now ?? Date.now;
  const T = `${pg.escapeIdentifier(SCHEMA)}.proxy_documents`;
  const running = new SingleFlight<ProxiedDocument | undefined>();
  const { healthOf } = deps.upstreams;
  const revalidate = revalidationFactory({ flights: running, upstreams: deps.upstreams, staleMs: () => deps.settings().metadataStaleMs, now, log: deps.log });

  const read = async (repository: string, key: string): Promise<Row | undefined> => {
    const r = await deps.pool.query<{ body: string | null; etag: string | null; last_modified: string | null; fetched_at: Date }>(
      `select body, etag, last_modified, fetched_at from ${T} where repository = $1 and key = $2`,
      [repository, key],
    );
    const row = r.rows[0];
    return row ? { body: row.body, etag: row.etag, lastModified: row.last_modified, fetchedAt: row.fetched_at } : undefined;
  };
  const write = async (repository: string, key: string, body: string | null, etag: string | null, lastModified: string | null): Promise<Date> => {
    const at = new Date(now());
    await deps.pool.query(
      `insert into ${T} (repository, key, body, etag, last_modified, fetched_at) values ($1, $2, $3, $4, $5, $6)
       on conflict (repository, key) do update set body = excluded.body, etag = excluded.etag, last_modified = excluded.last_modified, fetched_at = excluded.fetched_at`,
      [repository, key, body, etag, lastModified, at],
    );
    return at;
  };
  const touch = async (repository: string, key: string): Promise<Date> => {
    const at = new Date(now());
    await deps.pool.query(`update ${T} set fetched_at = $3 where repository = $1 and key = $2`, [repository, key, at]);
    return at;
  };
  const served = (row: Row, stale: boolean, fetchedAt = row.fetchedAt): ProxiedDocument | undefined => (row.body === null ? undefined : { body: row.body, fetchedAt, stale });
  /** The cached copy, served stale because the upstream failed (counted). */
  const staleCopy = (repository: string, row: Row): ProxiedDocument | undefined => {
    deps.upstreams.servedStale(repository);
    return served(row, true);
  };

  /** The upstream failed: the cached copy, marked stale, or a 502 when there is none. */
  const failed = (repository: string, url: string, row: Row | undefined, why: string): ProxiedDocument | undefined => {
    healthOf(repository).failed();
    deps.log.warn({ repository, url, why }, "proxy: the upstream failed; serving the cached document if there is one");
    if (row?.body != null) return staleCopy(repository, row);
    throw badGateway(`the upstream of ${repository} did not answer for ${new URL(url).pathname} and no copy is cached: ${why}`);
  };

  const refresh = async (repository: string, key: string, url: string, kind: DocumentKind, row: Row | undefined): Promise<ProxiedDocument | undefined> => {
    const conditional: Record<string, string> = {};
    if (row?.body != null && row.etag) conditional["if-none-match"] = row.etag;
    if (row?.body != null && row.lastModified) conditional["if-modified-since"] = row.lastModified;
    let answer: UpstreamAnswer;
    try {
      answer = await deps.upstreams.get(repository, url, { accept: kind.accept, ...conditional }, MAX_DOCUMENT_BYTES);
    } catch (err) {
      if (!(err instanceof UpstreamUnreachable)) throw err;
      return failed(repository, url, row, err.message);
    }
    if (answer.status === 304 && row?.body != null) {
      healthOf(repository).succeeded();
      return served(row, false, await touch(repository, key));
    }
    if (answer.status === 200) {
      const body = answer.body.toString("utf8");
      const why = kind.invalid?.(body);
      if (why) return failed(repository, url, row, why);
      healthOf(repository).succeeded();
      const header = (name: string) => (typeof answer.headers[name] === "string" ? (answer.headers[name] as string) : null);
      return { body, fetchedAt: await write(repository, key, body, header("etag"), header("last-modified")), stale: false };
    }
    if (answer.status === 404 || answer.status === 410) {
      healthOf(repository).succeeded();
      await write(repository, key, null, null, null);
      return undefined;
    }
    if (answer.status === 401 || answer.status === 403) {
      deps.log.error({ repository, url, status: answer.status }, "proxy: the upstream refused this server's credentials");
      if (row?.body != null) return staleCopy(repository, row);
      throw badGateway(`the upstream of ${repository} refused to answer (${answer.status}): check the repository's upstream credentials`);
    }
    return failed(repository, url, row, `the upstream answered ${answer.status}`);
  };

  return {
    /**
     * The document `key` of a proxy repository, from `url` at its upstream: cached, fetched,
     * revalidated or served stale; undefined: the upstream has no such document.
     */
    async get(repository: string, key: string, url: string, kind: DocumentKind): Promise<ProxiedDocument | undefined> {
      const row = await read(repository, key);
      const ttl = row && row.body === null ? DOCUMENT_MISS_TTL_MS : deps.settings().metadataTtlMs;
      if (row && now() - row.fetchedAt.getTime() < ttl) return served(row, false);
      if (deps.readOnly) {
        if (row) return served(row, false);
        throw forbidden(READ_ONLY_FETCH);
      }
      if (!healthOf(repository).mayAsk()) {
        if (row?.body != null) return staleCopy(repository, row);
        throw badGateway(`the upstream of ${repository} is marked down after repeated failures and no copy of ${new URL(url).pathname} is cached: it is asked again after a backoff`);
      }
      return revalidate({
        row,
        key: ["document", repository, key],
        reread: () => read(repository, key),
        ttlOf: (r) => (r.body === null ? DOCUMENT_MISS_TTL_MS : deps.settings().metadataTtlMs),
        hasCopy: (r) => r.body !== null,
        answer: served,
        refresh: (r) => refresh(repository, key, url, kind, r),
        about: { repository, url },
      });
    },
  };
}
export type ProxiedDocuments = ReturnType<typeof proxiedDocumentsFactory>;
