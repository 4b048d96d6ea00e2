import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { connect, JSONCodec, RequestStrategy, RetentionPolicy, StorageType, type JetStreamClient, type NatsConnection, type Subscription } from "nats";
import { eventParsers, streamFor, subjectFor, type EventCatalog, type EventKind } from "@svc/contracts";
import { settlesWithin } from "./settles-within.js";

/** How long close() lets the NATS connection drain before it closes it. */
const DRAIN_WAIT_MS = 3000;

const codec = JSONCodec<unknown>();

/**
 * A NATS link that connects in the background and keeps reconnecting. A service never waits
 * on NATS to start or to answer a request: publishing while NATS is down is a logged,
 * counted miss (the credential cache TTL bounds what a lost event can cost), and
 * subscriptions are re-made by the client on reconnect.
 */
export interface Bus {
  /** Publishes to the tenant's JetStream stream; resolves false when the event could not be stored. */
  publish<K extends EventKind>(kind: K, event: EventCatalog[K]): Promise<boolean>;
  /** Core subscription to a kind's subject: for live reactions such as cache eviction. */
  subscribe<K extends EventKind>(kind: K, handler: (event: EventCatalog[K]) => void): void;
  connected(): boolean;
  /** How many times the connection was lost so far: core messages sent meanwhile never arrived (a cache fed by events starts again). */
  losses(): number;
  /** Resolves true once connected (at once if already), false after `timeoutMs` without a connection. */
  ready(timeoutMs: number): Promise<boolean>;
  /**
   * Control plane (deployment-wide, not per tenant, core NATS): answer requests on a subject
   * with a handler's JSON result. Re-attached on every (re)connect.
   */
  respond(subject: string, handler: (request: unknown) => unknown | Promise<unknown>): void;
  /**
   * Asks every process listening on a subject and collects what answers within `maxWaitMs`.
   * Given `expectNodes`, answers as soon as each node named there has replied (a reply names
   * its `node`), waiting the window only for those that have not.
   */
  gather(subject: string, request: unknown, maxWaitMs: number, opts?: GatherOptions): Promise<unknown[]>;
  /** Fire-and-forget core message (heartbeats); false when not connected. */
  announce(subject: string, message: unknown): boolean;
  /** Core subscription to a control subject. */
  listen(subject: string, handler: (message: unknown) => void): void;
  close(): Promise<void>;
}

export interface GatherOptions {
  /** The nodes known to be listening; none named means no expectation: the whole window is waited. */
  expectNodes?: Iterable<string>;
}

/**
 * Decodes replies into `out` until the source ends or every expected node has answered.
 * Leaving the loop early ends the NATS request, so the window's timer and inbox go with it;
 * `out` keeps what came before a failure of the source.
 */
export async function collectReplies(source: AsyncIterable<{ data: Uint8Array }>, expectNodes?: Iterable<string>, out: unknown[] = []): Promise<unknown[]> {
  const waiting = new Set(expectNodes ?? []);
  const early = waiting.size > 0;
  for await (const m of source) {
    let reply: unknown;
    try {
      reply = codec.decode(m.data);
    } catch {
      continue; // a reply that does not parse is left out
    }
    out.push(reply);
    const node = (reply as { node?: unknown } | null)?.node;
    if (typeof node === "string") waiting.delete(node);
    if (early && waiting.size === 0) break;
  }
  return out;
}

/** The servers of `svc.nats-url`: one URL, or a cluster's URLs separated by commas. */
export function natsServers(setting: string): string[] {
  return setting.split(",").map((s) => s.trim()).filter(Boolean);
}

/**
 * What every NATS connection of the suite sets besides its servers. `noAsyncTraces`: the client
 * otherwise builds two Error objects (stack traces for a timeout that rarely comes) for every
 * request, and each JetStream publish is one; the artifacts service publishes an event per
 * write, and this was a tenth of its CPU per npm publish. A timeout still says what timed out.
 */
export const NATS_CLIENT_OPTIONS = { noAsyncTraces: true } as const;

/**
 * How to connect for `svc.nats-url`: its servers, and the user and password of a URL that carries
 * them (`nats://user:password@host:4222`, as other NATS clients take them), which this client
 * does not read from a URL by itself. The servers lose them, so no log or error can show them.
 */
export function natsConnectOptions(setting: string): { servers: string[]; user?: string; pass?: string } {
  let user: string | undefined;
  let pass: string | undefined;
  const servers = natsServers(setting).map((server) => {
    let u: URL;
    try {
      u = new URL(server);
    } catch {
      return server;
    }
    if (!u.username && !u.password) return server;
    user ??= decodeURIComponent(u.username);
    pass ??= decodeURIComponent(u.password);
    u.username = "";
    u.password = "";
    return u.toString();
  });
  return user === undefined ? { servers } : { servers, user, pass };
}

export function newEventId(): string {
  return randomUUID();
}

export function createBus(opts: { url: string; tenant: string; name: string; log: Logger }): Bus {
  const { url, tenant, log } = opts;
  let nc: NatsConnection | undefined;
  let js: JetStreamClient | undefined;
  let closed = false;
  let streamReady = false;
  // False while the client is reconnecting: publishing then would only wait for a timeout.
  let up = false;
  let lost = 0;
  const whenUp: Array<() => void> = [];
  const pending: Array<{ kind: EventKind; handler: (e: never) => void }> = [];
  const responders: Array<{ subject: string; handler: (request: unknown) => unknown | Promise<unknown> }> = [];
  const listeners: Array<{ subject: string; handler: (message: unknown) => void }> = [];

  const attachResponder = (conn: NatsConnection, r: (typeof responders)[number]) => {
    const sub = conn.subscribe(r.subject);
    subs.push(sub);
    void (async () => {
      for await (const m of sub) {
        let request: unknown;
        try {
          request = m.data.length ? codec.decode(m.data) : {};
        } catch {
          request = {};
        }
        try {
          m.respond(codec.encode(await r.handler(request)));
        } catch (err) {
          log.warn({ err, subject: r.subject }, "control request failed");
        }
      }
    })();
  };
  const attachListener = (conn: NatsConnection, l: (typeof listeners)[number]) => {
    const sub = conn.subscribe(l.subject);
    subs.push(sub);
    void (async () => {
      for await (const m of sub) {
        try {
          l.handler(codec.decode(m.data));
        } catch (err) {
          log.warn({ err, subject: l.subject }, "control message handler failed");
        }
      }
    })();
  };
  const subs: Subscription[] = [];

  const attach = <K extends EventKind>(conn: NatsConnection, kind: K, handler: (event: EventCatalog[K]) => void) => {
    const sub = conn.subscribe(subjectFor(tenant, kind));
    subs.push(sub);
    void (async () => {
      for await (const m of sub) {
        let value: unknown;
        try {
          value = codec.decode(m.data);
        } catch {
          value = undefined;
        }
        const event = eventParsers[kind](value);
        if (!event) {
          log.warn({ subject: m.subject }, "set aside an event that does not match its schema");
          continue;
        }
        try {
          handler(event as EventCatalog[K]);
        } catch (err) {
          log.error({ err, subject: m.subject }, "event handler failed");
        }
      }
    })();
  };

  const ensureStream = async (conn: NatsConnection) => {
    const jsm = await conn.jetstreamManager();
    const name = streamFor(tenant);
    const config = { name, subjects: [`svc.${tenant}.>`], storage: StorageType.File, retention: RetentionPolicy.Limits, max_age: 0 };
    try {
      await jsm.streams.info(name);
    } catch {
      try {
        await jsm.streams.add(config);
      } catch (err) {
        // Another process may have created it at the same moment.
        await jsm.streams.info(name).catch(() => {
          throw err;
        });
      }
    }
    streamReady = true;
  };

  const start = async () => {
    let warned = false;
    while (!closed) {
      try {
        const conn = await connect({ ...natsConnectOptions(url), ...NATS_CLIENT_OPTIONS, name: opts.name, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 2000 });
        if (closed) {
          await conn.close();
          return;
        }
        nc = conn;
        js = conn.jetstream();
        up = true;
        for (const resolve of whenUp.splice(0)) resolve();
        log.info("connected to NATS");
        for (const p of pending) attach(conn, p.kind, p.handler as never);
        for (const r of responders) attachResponder(conn, r);
        for (const l of listeners) attachListener(conn, l);
        void (async () => {
          for await (const s of conn.status()) {
            if (s.type === "disconnect") {
              up = false;
              lost++;
              log.warn("lost the NATS connection; reconnecting");
            }
            if (s.type === "reconnect") {
              up = true;
              log.info("reconnected to NATS");
              streamReady = false;
            }
          }
        })();
        await ensureStream(conn).catch((err) => log.warn({ err }, "could not ensure the event stream yet"));
        return;
      } catch (err) {
        if (!warned) {
          log.warn({ err: { message: (err as Error).message } }, "NATS is not reachable; retrying in the background");
          warned = true;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  void start();

  return {
    async publish(kind, event) {
      if (!nc || !js || nc.isClosed() || !up) {
        log.warn({ kind }, "event not published: NATS is not connected");
        return false;
      }
      try {
        if (!streamReady) await ensureStream(nc);
        await js.publish(subjectFor(tenant, kind), codec.encode(event), { msgID: (event as { id?: string }).id, timeout: 2000 });
        return true;
      } catch (err) {
        log.warn({ kind, err: { message: (err as Error).message } }, "event not published");
        return false;
      }
    },
    subscribe(kind, handler) {
      pending.push({ kind, handler: handler as never });
      if (nc) attach(nc, kind, handler);
    },
    connected: () => nc !== undefined && !nc.isClosed() && up,
    losses: () => lost,
    ready(timeoutMs) {
      if (nc && !nc.isClosed() && up) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        timer.unref();
        whenUp.push(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
    respond(subject, handler) {
      const r = { subject, handler };
      responders.push(r);
      if (nc) attachResponder(nc, r);
    },
    listen(subject, handler) {
      const l = { subject, handler };
      listeners.push(l);
      if (nc) attachListener(nc, l);
    },
    announce(subject, message) {
      if (!nc || nc.isClosed() || !up) return false;
      nc.publish(subject, codec.encode(message));
      return true;
    },
    async gather(subject, request, maxWaitMs, opts) {
      if (!nc || nc.isClosed() || !up) return [];
      const out: unknown[] = [];
      try {
        const replies = await nc.requestMany(subject, codec.encode(request), { strategy: RequestStrategy.Timer, maxWait: maxWaitMs });
        await collectReplies(replies, opts?.expectNodes, out);
      } catch (err) {
        log.warn({ err: { message: (err as Error).message }, subject }, "control request got no answers");
      }
      return out;
    },
    /**
     * Drains the connection for up to DRAIN_WAIT_MS, then closes it. A drain could wait for ever
     * (seen as pods were stopped one by one in `npm run image-check`: the console and the
     * notifier held past their shutdown grace in `bus.close()`, and exited 1); what it would
     * still flush is safe without it: the outbox marks an event sent only once JetStream
     * acknowledged it, so the next process sends what was not.
     */
    async close() {
      closed = true;
      for (const s of subs) s.unsubscribe();
      const conn = nc;
      if (!conn || conn.isClosed()) return;
      if (!(await settlesWithin(conn.drain(), DRAIN_WAIT_MS)) && !conn.isClosed()) await conn.close().catch(() => {});
    },
  };
}
