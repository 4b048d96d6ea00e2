import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import type pg from "pg";
import { Counter, Gauge, type Registry } from "prom-client";
import { ServiceError, forbidden, notFound, type Actor } from "@svc/contracts";
import type { Address, ArtifactService, PublishChecks, Published } from "../domain/artifact-service.js";
import type { DeclaredDigests } from "../domain/upload-checks.js";
import { lockKey, type MetadataStore } from "../store/metadata-store.js";
import { SingleFlight } from "./single-flight.js";
import { upstreamStream, UpstreamUnreachable, type UpstreamAnswer, type UpstreamStream } from "./upstream-client.js";
import { UpstreamHealth } from "./upstream-health.js";
import { authorization, type UpstreamConfig } from "./upstream.js";

export const READ_ONLY_FETCH = "this server is read-only (svc.read-only): it serves what its proxy repositories hold and fetches nothing more from their upstreams";

export const badGateway = (message: string) => new ServiceError("bad_gateway", message);

/** Where a proxied file comes from, and what it must hash to (what the upstream's metadata declares). */
export interface FileSource {
  url: string;
  /** Checked as the bytes are stored: a mismatch stores nothing and is answered 502. Empty: nothing declared. */
  digests: DeclaredDigests;
  /** How messages name the file ("lodash@4.17.21", "junit-4.13.jar"). */
  what: string;
  contentType?: string;
  /** Digests the upstream declares in its answer's headers (a raw upstream's X-Checksum-*), checked beside `digests`. */
  declared?: (headers: IncomingHttpHeaders) => DeclaredDigests;
  /** How the file is stored (a format's own publish: Maven's deploy records its version rows and digests); default the artifact service's. */
  publish?: (a: Address, body: Readable, contentType: string, actor: Actor, checks: PublishChecks) => Promise<Published>;
}

const mergeDigests = (a: DeclaredDigests, b: DeclaredDigests): DeclaredDigests => {
  const out: DeclaredDigests = { ...a };
  for (const [name, entries] of Object.entries(b) as [keyof DeclaredDigests, NonNullable<DeclaredDigests[keyof DeclaredDigests]>][]) out[name] = [...(out[name] ?? []), ...entries];
  return out;
};

export interface UpstreamsDeps {
  pool: pg.Pool;
  /** Where the fetch locks' connections come from (ProxyDeps.lockPool); default `pool`. */
  lockPool?: pg.Pool;
  metadata: Pick<MetadataStore, "find">;
  artifacts: Pick<ArtifactService, "publish">;
  /** A proxy repository's upstream (credentials opened), or undefined for a hosted one. */
  upstreamOf: (repository: string) => UpstreamConfig | undefined;
  settings: () => { blockPrivate: boolean };
  readOnly: boolean;
  log: FastifyBaseLogger;
  /** Who the stored files' events name. */
  actor: Actor;
  /** Where the proxies' meters are registered; absent: none (tests). */
  registry?: Registry;
  now?: () => number;
}

/**
 * What every format's proxy repositories share (docs/administration/repositories.md, "Proxy
 * repositories"): the upstream asked (its credentials only to its own origin, the address rule
 * of block-private-import-hosts), its health (marked down after repeated failures, asked again
 * after a backoff), and files fetched once: one fetch however many ask, in this process
 * (single-flight) and across nodes (a Postgres advisory lock, from its own pool), streamed from
 * the upstream into the store in bounded memory and checked against the digests the upstream
 * declares as they are stored, through the artifact service, so the screening gate sees a
 * fetched file as it sees a publish.
 */
export function upstreamsFactory(deps: UpstreamsDeps) {
  const now = deps.now ?? Date.now;
  const files = new SingleFlight<void>();
  const health = new Map<string, UpstreamHealth>();
  const healthOf = (repository: string) => {
    let h = health.get(repository);
    if (!h) health.set(repository, (h = new UpstreamHealth(now)));
    return h;
  };
  const upstream = (repository: string): UpstreamConfig => {
    const u = deps.upstreamOf(repository);
    if (!u) throw new Error(`${repository} is not a proxy repository`);
    return u;
  };

  /** Runs `fn` holding a Postgres session advisory lock on `key`: one holder across every node. */
  const withLock = async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const client = await (deps.lockPool ?? deps.pool).connect();
    let broken: Error | undefined;
    try {
      await client.query(`select pg_advisory_lock(${key})`);
      try {
        return await fn();
      } finally {
        await client.query(`select pg_advisory_unlock(${key})`).catch((err: Error) => (broken = err));
      }
    } finally {
      // A connection whose unlock failed is dropped (its session's locks go with it).
      client.release(broken);
    }
  };

  // The proxies' meters (docs/operations/health-and-metrics.md): fetches by outcome, stale copies served, upstreams marked down.
  const fetches = deps.registry && new Counter({ name: "svc_proxy_fetches_total", help: "Files proxy repositories fetched from their upstreams, by outcome: stored, missing (the upstream has none), mismatch (not the digest declared), refused (by the screening gate), failed (the upstream did not answer, or not with the file)", labelNames: ["repository", "outcome"] as const, registers: [deps.registry] });
  const stale = deps.registry && new Counter({ name: "svc_proxy_stale_total", help: "Cached metadata proxy repositories served stale (Warning 110) because their upstreams failed or were marked down", labelNames: ["repository"] as const, registers: [deps.registry] });
  if (deps.registry) {
    new Gauge({
      name: "svc_proxy_upstream_down",
      help: "1 while a proxy repository's upstream is marked down after repeated failures (asked again after a backoff), as this node has seen it",
      labelNames: ["repository"] as const,
      registers: [deps.registry],
      collect() {
        this.reset();
        for (const [repository, h] of health) this.set({ repository }, h.down ? 1 : 0);
      },
    });
  }
  const counted = (repository: string, outcome: "stored" | "missing" | "mismatch" | "refused" | "failed") => fetches?.inc({ repository, outcome });

  /** A GET of the upstream, its body still arriving; throws UpstreamUnreachable. */
  const ask = (repository: string, url: string, headers: Record<string, string>, maxBytes?: number): Promise<UpstreamStream> => {
    const u = upstream(repository);
    const value = authorization(u.credentials);
    return upstreamStream(url, { headers, blockPrivate: deps.settings().blockPrivate, ...(maxBytes ? { maxBytes } : {}), ...(value ? { authorization: { origin: new URL(u.url).origin, value } } : {}) });
  };

  const fetchFile = async (repository: string, path: string, source: () => Promise<FileSource | undefined>): Promise<void> => {
    if (await deps.metadata.find(repository, path)) return;
    const s = await source();
    if (!s) throw notFound(`no ${path} in ${repository} or its upstream`);
    let answer: UpstreamStream;
    try {
      answer = await ask(repository, s.url, { accept: "*/*" });
    } catch (err) {
      if (!(err instanceof UpstreamUnreachable)) throw err;
      healthOf(repository).failed();
      counted(repository, "failed");
      throw badGateway(`the upstream of ${repository} did not answer for ${s.what} and it is not cached: ${err.message}`);
    }
    if (answer.status !== 200) answer.body.resume();
    if (answer.status === 404 || answer.status === 410) {
      healthOf(repository).succeeded();
      counted(repository, "missing");
      throw notFound(`the upstream of ${repository} has no ${s.what}`);
    }
    if (answer.status !== 200) {
      if (answer.status >= 500 || answer.status === 429) healthOf(repository).failed();
      counted(repository, "failed");
      throw badGateway(`the upstream of ${repository} answered ${answer.status} for ${s.what}, which is not cached`);
    }
    try {
      const digests = s.declared ? mergeDigests(s.digests, s.declared(answer.headers)) : s.digests;
      const publish = s.publish ?? deps.artifacts.publish;
      const stored = await publish({ repository, segments: path.split("/"), path }, answer.body, s.contentType ?? "application/octet-stream", deps.actor, { digests });
      healthOf(repository).succeeded();
      counted(repository, "stored");
      deps.log.info({ repository, path, size: stored.size }, "proxy: file fetched from the upstream and stored");
    } catch (err) {
      answer.body.destroy();
      if (err instanceof UpstreamUnreachable) {
        healthOf(repository).failed();
        counted(repository, "failed");
        throw badGateway(`the upstream of ${repository} broke off ${s.what}, which is not cached: ${err.message}`);
      }
      // A declared digest that does not match (the artifact service's 400): the upstream's file is not what its metadata says.
      if (err instanceof ServiceError && err.code === "invalid_input") {
        counted(repository, "mismatch");
        deps.log.error({ repository, path, reason: err.message }, "proxy: a fetched file does not match the digest its upstream declares; refused, nothing stored");
        throw badGateway(`${s.what} from the upstream of ${repository} was refused: it does not match the digest the upstream declares (${err.message.replace(/: nothing was stored$/, "")})`);
      }
      if (err instanceof ServiceError && err.code === "forbidden") counted(repository, "refused");
      throw err;
    }
  };

  return {
    /** The upstream's health as this process has seen it (each format's metadata fetches mark it too). */
    healthOf,
    /** Counts a cached document served stale because the upstream failed (svc_proxy_stale_total). */
    servedStale: (repository: string) => void stale?.inc({ repository }),
    upstream,
    /** A GET of a proxy repository's upstream, its whole body read (metadata, bounded by `maxBytes`); throws UpstreamUnreachable. */
    async get(repository: string, url: string, headers: Record<string, string>, maxBytes: number): Promise<UpstreamAnswer> {
      const answer = await ask(repository, url, headers, maxBytes);
      const chunks: Buffer[] = [];
      for await (const chunk of answer.body) chunks.push(chunk as Buffer);
      return { status: answer.status, headers: answer.headers, body: Buffer.concat(chunks) };
    },
    /**
     * Makes sure `path` is stored before it is served as a file: fetched from `source()` (asked
     * only when it is not stored, under the lock) on its first request, once however many ask.
     */
    async file(repository: string, path: string, source: () => Promise<FileSource | undefined>): Promise<void> {
      if (await deps.metadata.find(repository, path)) return;
      if (deps.readOnly) throw forbidden(READ_ONLY_FETCH);
      await files.run(`${repository}\0${path}`, () => withLock(lockKey("proxy-fetch", repository, path), () => fetchFile(repository, path, source)));
    },
  };
}
export type Upstreams = ReturnType<typeof upstreamsFactory>;
