import type { Logger } from "pino";
import {
  AckPolicy,
  ConsumerEvents,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  connect,
  nanos,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
} from "nats";
import { ARTIFACT_EVENT_KINDS, EVENT_VERSION, eventParsers, streamFor, type ArtifactEvent, type ArtifactEventKind } from "@svc/contracts";
import { NATS_CLIENT_OPTIONS, natsConnectOptions } from "@svc/kit";

/** The durable consumer every notifier of a tenant shares: each event goes to one of them. */
export const DURABLE = "notifier";

export interface ConsumerDeps {
  url: string;
  tenant: string;
  log: Logger;
  /** Resolves once the event is safely recorded; only then is it acknowledged. */
  handle: (event: ArtifactEvent) => Promise<unknown>;
  /** Events the stream holds that no notifier has read yet. */
  onBacklog?: (waiting: number) => void;
  /** Counts an event set aside because it cannot be read. */
  onUnreadable?: () => void;
  /** Pause before a failed event is offered again. */
  retryMs?: number;
}

/** `svc.<tenant>.artifact.published.v1` -> `artifact.published`; undefined for anything else. */
export function kindOfSubject(subject: string, tenant: string): ArtifactEventKind | undefined {
  const prefix = `svc.${tenant}.`;
  const suffix = `.${EVENT_VERSION}`;
  if (!subject.startsWith(prefix) || !subject.endsWith(suffix)) return undefined;
  const kind = subject.slice(prefix.length, -suffix.length);
  return (ARTIFACT_EVENT_KINDS as readonly string[]).includes(kind) ? (kind as ArtifactEventKind) : undefined;
}

/**
 * A durable pull consumer on the tenant's stream, filtered to artifact events. Created if
 * absent (new consumers start with the events published from then on: switching webhooks on
 * does not replay the store's history), and resumed where the deployment's notifiers left off,
 * so a notifier that was down catches up. An event is acknowledged only after `handle`
 * resolved; when it throws, the event is offered again after `retryMs`.
 */
export function startEventConsumer(deps: ConsumerDeps) {
  const { log, tenant } = deps;
  const stream = streamFor(tenant);
  const filter = `svc.${tenant}.artifact.>`;
  let nc: NatsConnection | undefined;
  let messages: ConsumerMessages | undefined;
  let stopped = false;
  let ready = false;

  const ensureStream = async (jsm: JetStreamManager) => {
    try {
      await jsm.streams.info(stream);
    } catch {
      // The same stream the publishers' bus creates (packages/kit messaging.ts).
      await jsm.streams.add({ name: stream, subjects: [`svc.${tenant}.>`], storage: StorageType.File, retention: RetentionPolicy.Limits, max_age: 0 }).catch(async (err) => {
        await jsm.streams.info(stream).catch(() => {
          throw err;
        });
      });
    }
  };

  const ensureConsumer = async (jsm: JetStreamManager) => {
    try {
      await jsm.consumers.info(stream, DURABLE);
    } catch {
      await jsm.consumers
        .add(stream, {
          durable_name: DURABLE,
          filter_subject: filter,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.New,
          ack_wait: nanos(30_000),
          max_deliver: -1,
          max_ack_pending: 1000,
        })
        .catch(async (err) => {
          // Another notifier may have made it at the same moment.
          await jsm.consumers.info(stream, DURABLE).catch(() => {
            throw err;
          });
        });
      log.info({ stream, consumer: DURABLE, filter }, "created the durable event consumer");
    }
  };

  async function handleMessage(m: JsMsg): Promise<void> {
    deps.onBacklog?.(m.info.pending);
    const kind = kindOfSubject(m.subject, tenant);
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(m.data));
    } catch {
      value = undefined;
    }
    const event = kind ? eventParsers[kind](value) : undefined;
    if (!event) {
      // Never offered again: a later notifier would not read it any better.
      log.warn({ subject: m.subject, seq: m.seq }, "set aside an event that does not match its schema");
      deps.onUnreadable?.();
      m.term();
      return;
    }
    try {
      await deps.handle(event);
      m.ack();
    } catch (err) {
      log.error({ err, eventId: event.id, subject: m.subject }, "could not record the deliveries of an event; it will be offered again");
      m.nak(deps.retryMs ?? 5000);
    }
  }

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  const loop = (async () => {
    let warned = false;
    while (!stopped) {
      try {
        if (!nc || nc.isClosed()) {
          nc = await connect({ ...natsConnectOptions(deps.url), ...NATS_CLIENT_OPTIONS, name: "notifier-events", reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 2000 });
        }
        const jsm = await nc.jetstreamManager();
        await ensureStream(jsm);
        await ensureConsumer(jsm);
        const consumer = await nc.jetstream().consumers.get(stream, DURABLE);
        messages = await consumer.consume({ max_messages: 100 });
        const current = messages;
        void (async () => {
          for await (const s of await current.status()) {
            if (s.type === ConsumerEvents.ConsumerDeleted || s.type === ConsumerEvents.ConsumerNotFound) {
              log.warn({ consumer: DURABLE }, "the durable event consumer is gone; making it again");
              await ensureConsumer(jsm).catch((err) => log.warn({ err: { message: (err as Error).message } }, "could not make the event consumer yet"));
            }
          }
        })().catch(() => {});
        ready = true;
        warned = false;
        log.info({ stream, consumer: DURABLE, filter }, "consuming artifact events");
        for await (const m of current) {
          await handleMessage(m);
          if (stopped) break;
        }
        ready = false;
      } catch (err) {
        ready = false;
        if (!warned) {
          log.warn({ err: { message: (err as Error).message } }, "cannot consume events from NATS yet; retrying");
          warned = true;
        }
        await sleep(1000);
      }
    }
  })();

  return {
    ready: () => ready && nc !== undefined && !nc.isClosed(),
    async stop(): Promise<void> {
      stopped = true;
      ready = false;
      await messages?.close().catch(() => {});
      await Promise.race([loop, sleep(2000)]);
      if (nc && !nc.isClosed()) await nc.drain().catch(() => nc?.close());
    },
  };
}
