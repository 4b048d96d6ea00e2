import { createHash, randomBytes } from "node:crypto";
import { resolve } from "node:path";
import pg from "pg";
import type { BlobStore } from "@svc/blobs";
import { SCHEMA } from "../store/schema.js";

/**
 * What this artifacts node serves at a few paths, for the posture's comparison of nodes (the
 * admin service's content-check.ts asks every artifacts node on the `content` control subject
 * and raises svc.nodes.content-differs when two answer one path differently). Read-only: the
 * index row as a download finds it (Postgres, not the read cache, whose freshness is its own
 * question), then the blob as this node's store holds it: present, and for a small blob its
 * bytes hashed. Never a location, bucket, URL or credential: the store and the database are
 * named by fingerprints only.
 */

/** A path asked about (or proposed for the sample). */
export interface ContentPath {
  repository: string;
  path: string;
}

/**
 * `ok`: the blob is there and its bytes hash to the digest (or, past the read budget, its size
 * matches); `missing`: the index names a blob this node's store does not have; `corrupt`: the
 * bytes read do not hash to the digest or the size differs.
 */
export type BlobState = "ok" | "missing" | "corrupt";

export interface ContentAnswer extends ContentPath {
  /** The index row's digest and size; absent when this node's index has no such path. */
  sha256?: string;
  size?: number;
  blob?: BlobState;
  /** The row changed within the request's `olderThanMs`: too young to compare. */
  young?: boolean;
}

export interface ContentReply {
  node: string;
  service: "artifacts";
  /** The blob store's backend and a fingerprint of where it points (never the location itself). */
  storage: { kind: string; fingerprint: string };
  /** A fingerprint of the database this node's index is in. */
  database: string;
  /** Paths this node proposes for a sample (asked with `sample`). */
  sample: ContentPath[];
  answers: ContentAnswer[];
}

export interface ContentRequest {
  sample?: number;
  olderThanMs?: number;
  paths?: ContentPath[];
}

/** Bounds of one request: paths answered, paths proposed, bytes read per blob and in all. */
export const CONTENT_LIMITS = { paths: 64, sample: 32, blobBytes: 1 << 20, totalBytes: 8 << 20 } as const;

/** A short, one-way digest of a location: two nodes pointing at the same place share it. */
export const fingerprintOf = (what: string): string => createHash("sha256").update(`svc-storage:${what}`).digest("hex").slice(0, 16);

/** The filesystem backend's location: its root, resolved (a relative root means the same folder only from the same working directory). */
export const filesystemLocator = (root: string): string => `filesystem:${resolve(root)}`;

/** Where a node's blob store points, from its settings (never a credential): a folder, or an endpoint, bucket and prefix. */
export function storageLocator(s: { storage: string; filesystemRoot: string; s3Bucket: string; s3Endpoint: string; s3Prefix: string }): string {
  return s.storage === "s3" ? `s3:${s.s3Endpoint || "aws"}|${s.s3Bucket}|${s.s3Prefix}` : filesystemLocator(s.filesystemRoot);
}

const SAMPLE_SQL = `select a.repository, a.path from unnest($1::text[]) as r(start)
  cross join lateral (select repository, path from ${pg.escapeIdentifier(SCHEMA)}.artifacts
    where sha256 >= r.start and updated_at < now() - make_interval(secs => $2::float8 / 1000)
    order by sha256 limit 1) a`;

const FIND_SQL = `select sha256, size::float8 as size, updated_at >= now() - make_interval(secs => $3::float8 / 1000) as young
  from ${pg.escapeIdentifier(SCHEMA)}.artifacts where repository = $1 and path = $2`;

/** Reads the request leniently: anything malformed is left out, everything is capped. */
export function readContentRequest(raw: unknown): Required<ContentRequest> {
  const r = (raw ?? {}) as Record<string, unknown>;
  const sample = typeof r.sample === "number" && Number.isInteger(r.sample) ? Math.min(Math.max(r.sample, 0), CONTENT_LIMITS.sample) : 0;
  const olderThanMs = typeof r.olderThanMs === "number" && Number.isFinite(r.olderThanMs) ? Math.min(Math.max(r.olderThanMs, 0), 86_400_000) : 60_000;
  const paths = (Array.isArray(r.paths) ? r.paths : [])
    .filter((p): p is ContentPath => typeof p?.repository === "string" && typeof p?.path === "string" && p.repository.length <= 200 && p.path.length <= 4096)
    .slice(0, CONTENT_LIMITS.paths)
    .map((p) => ({ repository: p.repository, path: p.path }));
  return { sample, olderThanMs, paths };
}

export function contentReporterFactory(deps: {
  pool: Pick<pg.Pool, "query">;
  blobs: Pick<BlobStore, "kind" | "head" | "get">;
  node: string;
  /** Where the blob store points (filesystemLocator, or the object store's endpoint, bucket and prefix): only its fingerprint leaves. */
  storageLocator: string;
}) {
  let database: Promise<string> | undefined;
  const databaseFingerprint = (): Promise<string> =>
    (database ??= (async () => {
      const where = await deps.pool.query<{ db: string; addr: string | null; port: number | null }>("select current_database() as db, inet_server_addr()::text as addr, inet_server_port() as port");
      // The cluster's own identifier when this role may read it; the server's address otherwise.
      const id = await deps.pool.query<{ id: string }>("select system_identifier::text as id from pg_control_system()").then(
        (r) => r.rows[0]?.id,
        () => undefined,
      );
      const w = where.rows[0]!;
      return fingerprintOf(`database:${id ?? `${w.addr}:${w.port}`}/${w.db}/${SCHEMA}`);
    })().catch((err: unknown) => {
      database = undefined;
      throw err;
    }));

  /** Hashes a blob's bytes; undefined when it went missing while read. */
  const hashOf = async (sha256: string): Promise<string | undefined> => {
    const stream = await deps.blobs.get(sha256);
    if (!stream) return undefined;
    const h = createHash("sha256");
    for await (const chunk of stream) h.update(chunk as Buffer);
    return h.digest("hex");
  };

  const answer = async (p: ContentPath, olderThanMs: number, budget: { bytes: number }): Promise<ContentAnswer> => {
    const row = (await deps.pool.query<{ sha256: string; size: number; young: boolean }>(FIND_SQL, [p.repository, p.path, olderThanMs])).rows[0];
    if (!row) return { ...p };
    const out: ContentAnswer = { ...p, sha256: row.sha256, size: row.size, ...(row.young ? { young: true } : {}) };
    const head = await deps.blobs.head(row.sha256);
    if (!head) return { ...out, blob: "missing" };
    if (head.size !== row.size) return { ...out, blob: "corrupt" };
    if (row.size > CONTENT_LIMITS.blobBytes || row.size > budget.bytes) return { ...out, blob: "ok" };
    budget.bytes -= row.size;
    const hash = await hashOf(row.sha256);
    return { ...out, blob: hash === undefined ? "missing" : hash === row.sha256 ? "ok" : "corrupt" };
  };

  return {
    async answer(raw: unknown): Promise<ContentReply> {
      const q = readContentRequest(raw);
      const sample: ContentPath[] = [];
      if (q.sample > 0) {
        // Random points in digest order (the sha256 index): a sample that never scans the table.
        const starts = Array.from({ length: q.sample }, () => randomBytes(32).toString("hex"));
        const seen = new Set<string>();
        for (const r of (await deps.pool.query<ContentPath>(SAMPLE_SQL, [starts, q.olderThanMs])).rows) {
          const k = `${r.repository}\n${r.path}`;
          if (!seen.has(k)) sample.push({ repository: r.repository, path: r.path }), seen.add(k);
        }
      }
      const budget = { bytes: CONTENT_LIMITS.totalBytes };
      const answers: ContentAnswer[] = [];
      for (const p of q.paths) answers.push(await answer(p, q.olderThanMs, budget));
      return { node: deps.node, service: "artifacts", storage: { kind: deps.blobs.kind, fingerprint: fingerprintOf(deps.storageLocator) }, database: await databaseFingerprint(), sample, answers };
    },
  };
}
