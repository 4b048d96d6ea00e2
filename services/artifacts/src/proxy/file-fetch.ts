import { createHash, randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { pipeline, Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type pg from "pg";
import { Counter, Gauge, type Registry } from "prom-client";
import { ServiceError, forbidden, notFound, type Actor } from "@svc/contracts";
import type { Address, ArtifactService, PublishChecks, PublishGate, Published } from "../domain/artifact-service.js";
import type { DeclaredDigests } from "../domain/upload-checks.js";
import { lockKey, type MetadataStore } from "../store/metadata-store.js";
import type { FetchRelayClient, FetchStreams } from "./fetch-relay.js";
import { FileSpool } from "./file-spool.js";
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

/**
 * A proxied file on its way from the upstream, for a client to receive as it arrives (its GET
 * answered 200 with `body`, and Content-Length `size` when the upstream declared one). The body
 * is destroyed with the failure when the file is refused at its end (a digest that does not
 * match, the gate) or the upstream breaks off: nothing is stored, and the client's response must
 * be broken off so that the client sees it incomplete.
 */
export interface LiveFile {
  body: Readable;
  size: number | undefined;
}

/** Where a fetch's bytes can be read as they arrive: its spool in this process, or another node's fetch (fetch-relay.ts). */
type LiveSource = { spool: FileSpool } | { nodeUrl: string; id: string };

/** A file's fetch under way in this process: what its callers share. */
interface Flight {
  /** Settles when the fetch does: the file stored, or why not. */
  done: Promise<void>;
  /** Where its bytes flow from, once they do; undefined when the fetch settled without that. */
  live: Promise<LiveSource | undefined>;
}

/** How long a file whose streamed fetch failed is fetched whole and checked before it is answered (its next fetch then answers a clean error). */
const UNSTREAMED_MS = 5 * 60_000;
/** The most such files remembered (the oldest forgotten first). */
const UNSTREAMED_MAX = 10_000;

export interface UpstreamsDeps {
  pool: pg.Pool;
  /** Where the file fetches' locks take their connections; default `pool`. */
  lockPool?: pg.Pool;
  /**
   * Where the metadata documents' locks (`exclusive`) take theirs; default `lockPool`. Give it a
   * pool of its own: a file fetch revalidates a document while it holds its file lock (an npm
   * tarball's packument), so with one pool, as many fetches as its connections would each hold
   * one and wait for another that only they could give back.
   */
  documentLockPool?: pg.Pool;
  metadata: Pick<MetadataStore, "find">;
  artifacts: Pick<ArtifactService, "publish">;
  /** The screening gate's verdict on a path, from its coordinates (the same the publish asks): a file it would refuse or hold is not streamed. */
  screen?: PublishGate["screen"];
  /** Where fetches' spools are written (file-spool.ts): a folder on disk; default the system's temporary folder. */
  spoolDir?: string;
  /** A proxy repository's upstream (credentials opened), or undefined for a hosted one. */
  upstreamOf: (repository: string) => UpstreamConfig | undefined;
  settings: () => { blockPrivate: boolean };
  readOnly: boolean;
  log: FastifyBaseLogger;
  /** Who the stored files' events name. */
  actor: Actor;
  /** A proxy over its storage quota after a fetch stored `keep`: evicts its least recently used files (domain/quota.ts). */
  evict?: (repository: string, keep: string) => Promise<unknown>;
  /** Where the proxies' meters are registered; absent: none (tests). */
  registry?: Registry;
  now?: () => number;
  /**
   * Fetches streamed across nodes (fetch-relay.ts): this node's address as the others reach it,
   * where fetches under way are recorded, how another node's fetch is asked for its bytes, and a
   * stored blob's bytes (what a relay broken off goes on from). Absent: a request on another
   * node waits for the file to be stored (tests).
   */
  relay?: { self: string; streams: FetchStreams; open: FetchRelayClient; blob: (sha256: string) => Promise<Readable | undefined> };
}

/** How long a fetch waiting for another node's fetch of the same file waits before it tries the lock again: 25 ms, doubling to 400 ms. */
export const lockRetryMs = (attempt: number): number => Math.min(400, 25 * 2 ** Math.min(attempt, 4));

/**
 * What every format's proxy repositories share (docs/administration/repositories.md, "Proxy
 * repositories"): the upstream asked (its credentials only to its own origin, the address rule
 * of block-private-import-hosts), its health (marked down after repeated failures, asked again
 * after a backoff), and files fetched once: one fetch however many ask, in this process (its
 * callers share it) and across nodes (a Postgres advisory lock, from its own pool), streamed from
 * the upstream into the store in bounded memory and checked against the digests the upstream
 * declares as they are stored, through the artifact service, so the screening gate sees a
 * fetched file as it sees a publish.
 *
 * The callers in this process that want it (`live`) are streamed the bytes as they arrive,
 * through a spool on disk each reads from the start at its own pace (file-spool.ts), the last
 * bytes only once the file is stored. A file the gate would refuse or hold (its verdict comes
 * from the package's coordinates, known before the bytes) is not streamed, nor, for a while, one
 * whose streamed fetch failed: their callers get the stored file or the refusal.
 *
 * Callers on other nodes wait for the lock, trying it now and then without holding a
 * connection; meanwhile, once the fetching node records its fetch (fetch-relay.ts), those that
 * want it are relayed its bytes as they arrive from that node's spool (`relayedFrom`: a relay
 * broken off goes on from the stored file, or ends with the fetch's failure). The others find
 * the file stored.
 */
export function upstreamsFactory(deps: UpstreamsDeps) {
  const now = deps.now ?? Date.now;
  const flights = new Map<string, Flight>();
  // Files whose streamed fetch failed lately, by flight key: when.
  const unstreamed = new Map<string, number>();
  const streams = (key: string): boolean => {
    const at = unstreamed.get(key);
    if (at === undefined) return true;
    if (now() - at < UNSTREAMED_MS) return false;
    unstreamed.delete(key);
    return true;
  };
  const noLongerStreamed = (key: string) => {
    unstreamed.delete(key);
    if (unstreamed.size >= UNSTREAMED_MAX) unstreamed.delete(unstreamed.keys().next().value!);
    unstreamed.set(key, now());
  };
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

  /**
   * Runs `fn` holding a Postgres session advisory lock on `key`: one holder across every node.
   * Only the holder keeps a connection: a waiter (the same file being fetched on another node)
   * tries the lock, gives its connection back and tries again a little later, so waiters never
   * take the connections other fetches need.
   */
  const fileLocks = deps.lockPool ?? deps.pool;
  const documentLocks = deps.documentLockPool ?? fileLocks;
  const withLock = async <T>(from: pg.Pool, key: string, fn: () => Promise<T>, waiting?: () => Promise<void>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      const client = await from.connect();
      let broken: Error | undefined;
      try {
        const got = await client.query<{ got: boolean }>(`select pg_try_advisory_lock(${key}) as got`).catch((err: Error) => {
          broken = err;
          throw err;
        });
        if (got.rows[0]?.got) {
          try {
            return await fn();
          } finally {
            await client.query(`select pg_advisory_unlock(${key})`).catch((err: Error) => (broken = err));
          }
        }
      } finally {
        // A connection whose lock query or unlock failed is dropped (its session's locks go with it).
        client.release(broken);
      }
      await waiting?.().catch((err: unknown) => deps.log.warn({ err }, "proxy: could not read which node fetches a file"));
      await sleep(lockRetryMs(attempt));
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

  /**
   * A spool for a file about to be fetched, when its bytes may go to clients as they arrive:
   * not when the gate would refuse or hold it (its callers get the refusal, not a broken stream).
   */
  const spoolFor = async (repository: string, path: string, headers: IncomingHttpHeaders): Promise<FileSpool | undefined> => {
    const verdict = await deps.screen?.(repository, path);
    if (verdict && verdict.action !== "WARN") return undefined;
    const declared = Number(headers["content-length"]);
    try {
      return await FileSpool.create(deps.spoolDir ?? tmpdir(), { size: Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined });
    } catch (err) {
      // Served once stored instead: the fetch itself does not need the spool.
      deps.log.warn({ err, repository, path }, "proxy: could not make a spool to stream a fetched file; its callers get it once stored");
      return undefined;
    }
  };

  /** This node's fetches other nodes may stream from (fetch-relay.ts), by id: their spools. */
  const relaying = new Map<string, FileSpool>();
  /** Records where a fetch's bytes can be streamed from by the other nodes (a failure to is logged: they wait for the file to be stored). */
  const offer = async (repository: string, path: string, spool: FileSpool): Promise<string | undefined> => {
    if (!deps.relay) return undefined;
    const id = randomUUID();
    relaying.set(id, spool);
    await deps.relay.streams.started(repository, path, id, deps.relay.self).catch((err: unknown) => deps.log.warn({ err, repository, path }, "proxy: could not record a fetch for other nodes to stream; theirs wait for it to be stored"));
    return id;
  };
  /** The fetch `id` is over: stored, or failed with `failure` (its relays elsewhere read why). */
  const withdraw = (id: string | undefined, failure?: Error) => {
    if (!id || !deps.relay) return;
    relaying.delete(id);
    const done = failure ? deps.relay.streams.failed(id, failure.message) : deps.relay.streams.stored(id);
    void done.catch((err: unknown) => deps.log.warn({ err }, "proxy: could not record the end of a fetch other nodes stream"));
  };

  /**
   * While another node holds the lock of `path`'s fetch: its record, once it streams (and not
   * from this node: a row left by this node's previous process), makes this node's fetch live
   * from that node, and is remembered in `seen` (a failure it ends with is this fetch's too).
   */
  const elsewhere = async (repository: string, path: string, goLive: (source: LiveSource) => void, seen: { id?: string }): Promise<void> => {
    if (seen.id || !deps.relay) return;
    const other = await deps.relay.streams.of(repository, path);
    if (!other || other.failure !== null || other.nodeUrl === deps.relay.self) return;
    seen.id = other.id;
    goLive({ nodeUrl: other.nodeUrl, id: other.id });
  };

  const fetchFile = async (repository: string, path: string, source: () => Promise<FileSource | undefined>, goLive: ((spool: FileSpool) => void) | undefined, seen: { id?: string } = {}): Promise<void> => {
    if (await deps.metadata.find(repository, path)) return;
    // The fetch this one waited for on another node failed: so does this one, as its waiters there did (not fetched again).
    const before = seen.id ? await deps.relay?.streams.byId(seen.id) : undefined;
    if (before?.failure) {
      noLongerStreamed(`${repository}\0${path}`);
      throw badGateway(before.failure);
    }
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
    let spool: FileSpool | undefined;
    let offered: Promise<string | undefined> | undefined;
    try {
      const digests = s.declared ? mergeDigests(s.digests, s.declared(answer.headers)) : s.digests;
      const publish = s.publish ?? deps.artifacts.publish;
      spool = goLive && (await spoolFor(repository, path, answer.headers));
      let body: Readable = answer.body;
      if (spool) {
        // The upstream's bytes into the spool on their way to the store; an upstream failing fails
        // both. Its readers get the last bytes once the file is stored: a client whose download
        // ended finds the file listed, and a file refused at its end is never answered whole.
        body = pipeline(answer.body, spool.tap(), () => {});
        goLive!(spool);
        // Recorded for the other nodes while the bytes flow (they look for it while they wait for the lock).
        offered = offer(repository, path, spool);
      }
      const stored = await publish({ repository, segments: path.split("/"), path }, body, s.contentType ?? "application/octet-stream", deps.actor, { digests });
      healthOf(repository).succeeded();
      counted(repository, "stored");
      deps.log.info({ repository, path, size: stored.size }, "proxy: file fetched from the upstream and stored");
      // A proxy keeps working over its quota: what has gone longest unused makes room (a failure leaves the next fetch to).
      await deps.evict?.(repository, path).catch((err: unknown) => deps.log.warn({ err, repository }, "proxy: could not evict files over its storage quota"));
      if (spool) {
        // Held by the gate as it was stored (advisory data arrived meanwhile): its clients are broken off, the next are refused.
        const held = (await deps.metadata.find(repository, path))?.heldReason;
        const refusal = held ? forbidden(`${repository}/${path} is held and not served until an administrator releases it: ${held}`) : undefined;
        spool.settle(refusal);
        withdraw(await offered, refusal);
      }
    } catch (err) {
      answer.body.destroy();
      const failure = describeFailure(repository, path, s.what, err);
      if (spool) {
        spool.settle(failure);
        withdraw(await offered, failure);
        noLongerStreamed(`${repository}\0${path}`);
        if (spool.sent > 0) deps.log.warn({ repository, path, sent: spool.sent, reason: failure.message }, "proxy: the answers streaming this file were broken off: it was not stored");
      }
      throw failure;
    }
  };

  /** What a fetch that failed as its bytes were stored answers, counted and logged. */
  const describeFailure = (repository: string, path: string, what: string, err: unknown): Error => {
    if (err instanceof UpstreamUnreachable) {
      healthOf(repository).failed();
      counted(repository, "failed");
      return badGateway(`the upstream of ${repository} broke off ${what}, which is not cached: ${err.message}`);
    }
    // A declared digest that does not match (the artifact service's 400): the upstream's file is not what its metadata says.
    if (err instanceof ServiceError && err.code === "invalid_input") {
      counted(repository, "mismatch");
      deps.log.error({ repository, path, reason: err.message }, "proxy: a fetched file does not match the digest its upstream declares; refused, nothing stored");
      return badGateway(`${what} from the upstream of ${repository} was refused: it does not match the digest the upstream declares (${err.message.replace(/: nothing was stored$/, "")})`);
    }
    if (err instanceof ServiceError && err.code === "forbidden") counted(repository, "refused");
    return err instanceof Error ? err : new Error(String(err));
  };

  /**
   * Another node's fetch of `path` as its bytes arrive, relayed to a client of this node;
   * undefined when that node does not answer (its fetch is over, or the node is gone). When the
   * relay breaks off (the node died, or its fetch failed), this node's own wait for the fetch
   * settles it: a failure the fetch recorded, or this node's own (it fetches the file itself
   * once the lock is free), breaks the client off; the file stored, the client gets the rest of
   * it from the store, once the bytes it already has are found to be the stored file's.
   */
  const relayedFrom = async (repository: string, path: string, from: { nodeUrl: string; id: string }, done: Promise<void>): Promise<LiveFile | undefined> => {
    const relay = deps.relay!;
    const got = await relay.open(from.nodeUrl, from.id);
    if (!got) return undefined;
    async function* bytes(): AsyncGenerator<Buffer> {
      const sentHash = createHash("sha256");
      let sent = 0;
      try {
        for await (const chunk of got!.body as AsyncIterable<Buffer>) {
          sentHash.update(chunk);
          sent += chunk.length;
          yield chunk;
        }
        return;
      } catch (err) {
        deps.log.warn({ repository, path, node: from.nodeUrl, sent, reason: (err as Error).message }, "proxy: the stream of a file another node fetches broke off; waiting for the file to be stored to send the rest");
      }
      let failure: unknown;
      await done.catch((err: unknown) => (failure = err));
      const recorded = await relay.streams.byId(from.id).catch(() => undefined);
      if (recorded?.failure) {
        // As on the node that fetched it: a retry here is fetched whole and checked before it is answered.
        noLongerStreamed(`${repository}\0${path}`);
        throw badGateway(recorded.failure);
      }
      if (failure) throw failure;
      const stored = await deps.metadata.find(repository, path);
      if (stored?.heldReason) throw forbidden(`${repository}/${path} is held and not served until an administrator releases it: ${stored.heldReason}`);
      const blob = stored && (await relay.blob(stored.sha256));
      if (!blob) throw badGateway(`${repository}/${path} was not stored after its stream broke off`);
      const sentDigest = sentHash.digest("hex");
      const check = createHash("sha256");
      let skipped = 0;
      for await (const chunk of blob as AsyncIterable<Buffer>) {
        if (skipped < sent) {
          const take = Math.min(chunk.length, sent - skipped);
          check.update(chunk.subarray(0, take));
          skipped += take;
          if (skipped === sent && check.digest("hex") !== sentDigest) throw badGateway(`${repository}/${path} as stored is not the file whose first ${sent} bytes were sent`);
          if (take < chunk.length) yield chunk.subarray(take);
          continue;
        }
        yield chunk;
      }
      if (skipped < sent) throw badGateway(`${repository}/${path} as stored is shorter than the ${sent} bytes sent`);
    }
    const body = Readable.from(bytes(), { objectMode: false });
    return { body, size: got.size };
  };

  /** The fetch of `key` under way in this process, or a new one. */
  const flightOf = (key: string, run: (goLive: (source: LiveSource) => void, seen: { id?: string }) => Promise<void>): Flight => {
    const running = flights.get(key);
    if (running) return running;
    let goLive!: (source: LiveSource | undefined) => void;
    const live = new Promise<LiveSource | undefined>((resolve) => (goLive = resolve));
    const done = (async () => {
      try {
        await run(goLive, {});
      } finally {
        flights.delete(key);
        goLive(undefined);
      }
    })();
    // Its callers each await it, or read its spool; none leaves it unhandled.
    done.catch(() => {});
    const flight = { done, live };
    flights.set(key, flight);
    return flight;
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
     * Runs `fn` as the one holder of the proxy lock named by `parts` across every node (the
     * lock the file fetches take, in its own key space): a metadata document's revalidation,
     * so that it is asked of the upstream once across nodes. A waiter holds no connection.
     */
    exclusive: <T>(fn: () => Promise<T>, ...parts: string[]): Promise<T> => withLock(documentLocks, lockKey("proxy-document", ...parts), fn),
    /**
     * Makes sure `path` is stored before it is served as a file: fetched from `source()` (asked
     * only when it is not stored, under the lock) on its first request, once however many ask.
     * With `live` (a GET of the whole file), answers the file as it arrives instead, when it is
     * being fetched in this process and may be streamed; undefined: it is stored, serve that.
     */
    async file(repository: string, path: string, source: () => Promise<FileSource | undefined>, opts: { live?: boolean } = {}): Promise<LiveFile | undefined> {
      if (await deps.metadata.find(repository, path)) return undefined;
      if (deps.readOnly) throw forbidden(READ_ONLY_FETCH);
      const key = `${repository}\0${path}`;
      const flight = flightOf(key, (goLive, seen) => {
        const live = streams(key);
        return withLock(
          fileLocks,
          lockKey("proxy-fetch", repository, path),
          () => fetchFile(repository, path, source, live ? (spool) => goLive({ spool }) : undefined, seen),
          live && deps.relay ? () => elsewhere(repository, path, goLive, seen) : undefined,
        );
      });
      const from = opts.live ? await flight.live : undefined;
      if (from && "spool" in from) {
        const body = from.spool.reader();
        if (body) return { body, size: from.spool.size };
      } else if (from) {
        const relayed = await relayedFrom(repository, path, from, flight.done);
        if (relayed) return relayed;
      }
      await flight.done;
      return undefined;
    },
    /** A fetch of this node's that another node streams (the internal route of fetch-relay.ts): its bytes from the first, as they arrive; undefined when it is over. */
    relayed(id: string): LiveFile | undefined {
      const spool = relaying.get(id);
      const body = spool?.reader();
      return spool && body ? { body, size: spool.size } : undefined;
    },
  };
}
export type Upstreams = ReturnType<typeof upstreamsFactory>;
