import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { connect, JSONCodec, RetentionPolicy, StorageType, type JetStreamClient, type NatsConnection, type Subscription } from "nats";
import { eventParsers, streamFor, subjectFor, type EventCatalog, type EventKind } from "@svc/contracts";

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
  close(): Promise<void>;
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
  const pending: Array<{ kind: EventKind; handler: (e: never) => void }> = [];
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
        const conn = await connect({ servers: url, name: opts.name, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 2000 });
        if (closed) {
          await conn.close();
          return;
        }
        nc = conn;
        js = conn.jetstream();
        up = true;
        log.info("connected to NATS");
        for (const p of pending) attach(conn, p.kind, p.handler as never);
        void (async () => {
          for await (const s of conn.status()) {
            if (s.type === "disconnect") {
              up = false;
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
    async close() {
      closed = true;
      for (const s of subs) s.unsubscribe();
      if (nc && !nc.isClosed()) await nc.drain().catch(() => nc?.close());
    },
  };
}
