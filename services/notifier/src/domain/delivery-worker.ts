import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { AttemptRecord, ClaimedDelivery, DeliveryStore } from "../store/delivery-store.js";
import { retryDelay } from "./backoff.js";
import type { Endpoint } from "@svc/kit";
import type { WebhookSender } from "./webhook-sender.js";
import { endpointLabel, type WebhookMetrics } from "./webhook-metrics.js";

export interface WorkerDeps {
  store: Pick<DeliveryStore, "claim" | "recordAttempt" | "release">;
  sender: Pick<WebhookSender, "send">;
  endpoints: readonly Endpoint[];
  /** Retries after the first attempt before a delivery is set aside. */
  retries: number;
  retryBaseMs: number;
  /** How long a claim holds: longer than one attempt can take. */
  leaseMs: number;
  /** Attempts in flight per endpoint in this process. */
  concurrency: number;
  /** How often an idle endpoint looks for work another notifier recorded. */
  pollMs: number;
  log: Logger;
  metrics: WebhookMetrics;
  random?: () => number;
}

interface Lane {
  endpoint: Endpoint;
  label: string;
  inFlight: Set<Promise<void>>;
  /** Claimed deliveries with their lease tokens, to give back on shutdown. */
  held: Map<string, string>;
  woken: boolean;
  /** Its endpoint left svc.webhook-endpoints, or delivery was switched off: it stops claiming. */
  retired: boolean;
  waiter?: () => void;
  loop?: Promise<void>;
}

/**
 * One lane per endpoint: it claims due deliveries of its endpoint from Postgres and sends up
 * to `concurrency` at a time, so a slow or dead receiver only ever occupies its own lane.
 * Every outcome is written back before the lane forgets the delivery; a notifier that dies
 * mid-attempt leaves a lease that runs out, and any notifier then tries the delivery again.
 */
export function deliveryWorkerFactory(deps: WorkerDeps) {
  const { store, sender, log, metrics } = deps;
  const laneOf = (e: Endpoint): Lane => ({ endpoint: e, label: endpointLabel(e.url), inFlight: new Set(), held: new Map(), woken: true, retired: false });
  const lanes = new Map<string, Lane>(deps.endpoints.map((e) => [e.url, laneOf(e)]));
  /** Lanes taken out by a settings change whose attempts may still be in flight. */
  const retiring = new Set<Lane>();
  let stopping = false;
  const timers = new Set<NodeJS.Timeout>();

  const wakeLane = (lane: Lane) => {
    lane.woken = true;
    const w = lane.waiter;
    lane.waiter = undefined;
    w?.();
  };

  const idle = (lane: Lane, ms: number) =>
    new Promise<void>((resolve) => {
      if (lane.woken || stopping || lane.retired) {
        lane.woken = false;
        return resolve();
      }
      const t = setTimeout(() => {
        lane.waiter = undefined;
        resolve();
      }, ms);
      lane.waiter = () => {
        clearTimeout(t);
        lane.woken = false;
        resolve();
      };
    });

  const wakeLater = (lane: Lane, ms: number) => {
    const t = setTimeout(() => {
      timers.delete(t);
      wakeLane(lane);
    }, ms);
    t.unref();
    timers.add(t);
  };

  async function attempt(lane: Lane, d: ClaimedDelivery, token: string): Promise<void> {
    const started = performance.now();
    let result: Awaited<ReturnType<WebhookSender["send"]>>;
    try {
      result = await sender.send({ url: d.endpoint, id: d.event_id, body: d.payload, key: lane.endpoint.key });
    } catch (err) {
      result = { outcome: "failed", error: `unexpected: ${(err as Error).message}` };
    }
    metrics.attemptSeconds.observe({ endpoint: lane.label }, (performance.now() - started) / 1000);
    metrics.attempts.inc({ endpoint: lane.label, outcome: result.outcome });

    let rec: AttemptRecord;
    const round = d.round_attempts + 1;
    if (result.outcome === "delivered") rec = { state: "delivered", status: result.status };
    else if (result.outcome === "refused") rec = { state: "set-aside", status: null, error: result.error };
    else if (round > deps.retries) rec = { state: "set-aside", status: result.status ?? null, error: result.error };
    else rec = { state: "pending", status: result.status ?? null, error: result.error, retryInMs: retryDelay(round, deps.retryBaseMs, undefined, deps.random) };

    const fields = { deliveryId: d.id, eventId: d.event_id, endpoint: lane.label, attempt: d.attempts + 1 };
    try {
      const mine = await store.recordAttempt(d.id, token, rec);
      if (!mine) log.warn(fields, "a delivery's claim ran out before its attempt was recorded; another notifier may send it again");
    } catch (err) {
      // The lease runs out and the delivery is tried again: at least once, never lost.
      log.error({ ...fields, err }, "could not record a delivery attempt");
      return;
    } finally {
      lane.held.delete(d.id);
    }
    if (rec.state === "delivered") {
      metrics.deliveries.inc({ endpoint: lane.label, outcome: "delivered" });
      const lag = (Date.now() - new Date(d.event_time).getTime()) / 1000;
      if (Number.isFinite(lag) && lag >= 0) metrics.deliveryLag.observe({ endpoint: lane.label }, lag);
      log.debug({ ...fields, status: rec.status }, "webhook delivered");
    } else if (rec.state === "set-aside") {
      metrics.deliveries.inc({ endpoint: lane.label, outcome: "set-aside" });
      log.warn({ ...fields, status: rec.status, error: rec.error }, "webhook delivery set aside");
    } else {
      log.info({ ...fields, status: rec.status, error: rec.error, retryInMs: rec.retryInMs }, "webhook attempt failed; will retry");
      wakeLater(lane, rec.retryInMs);
    }
  }

  async function run(lane: Lane): Promise<void> {
    while (!stopping && !lane.retired) {
      if (lane.inFlight.size >= deps.concurrency) {
        await Promise.race(lane.inFlight);
        continue;
      }
      const token = randomUUID();
      let d: ClaimedDelivery | undefined;
      try {
        d = await store.claim(lane.endpoint.url, deps.leaseMs, token);
      } catch (err) {
        log.warn({ endpoint: lane.label, err: { message: (err as Error).message } }, "could not look for deliveries");
        await idle(lane, deps.pollMs);
        continue;
      }
      if (!d) {
        await idle(lane, deps.pollMs);
        continue;
      }
      if (stopping || lane.retired) {
        await store.release(d.id, token).catch(() => {});
        break;
      }
      lane.held.set(d.id, token);
      const p: Promise<void> = attempt(lane, d, token).finally(() => lane.inFlight.delete(p));
      lane.inFlight.add(p);
    }
  }

  return {
    start(): void {
      for (const lane of lanes.values()) lane.loop ??= run(lane);
    },
    /**
     * The webhook settings changed at run time: a lane for each endpoint now listed (started when
     * delivery is on), the lanes of endpoints no longer listed (or all, delivery switched off)
     * stop claiming and finish what they hold; a kept endpoint signs with its new secret from its
     * next attempt. What is pending for a removed endpoint stays recorded and is sent if it comes back.
     */
    reconfigure(endpoints: readonly Endpoint[], enabled: boolean): void {
      if (stopping) return;
      const wanted = new Map(endpoints.map((e) => [e.url, e]));
      for (const [url, lane] of lanes) {
        if (enabled && wanted.has(url)) continue;
        lanes.delete(url);
        lane.retired = true;
        retiring.add(lane);
        wakeLane(lane);
        void Promise.allSettled([...(lane.loop ? [lane.loop] : []), ...lane.inFlight]).then(() => retiring.delete(lane));
      }
      if (!enabled) return;
      for (const e of endpoints) {
        let lane = lanes.get(e.url);
        if (lane) lane.endpoint = e;
        else lanes.set(e.url, (lane = laneOf(e)));
        lane.loop ??= run(lane);
      }
    },
    /** New work for an endpoint (or every endpoint): look now rather than at the next poll. */
    wake(url?: string): void {
      if (url === undefined) for (const lane of lanes.values()) wakeLane(lane);
      else {
        const lane = lanes.get(url);
        if (lane) wakeLane(lane);
      }
    },
    /**
     * Stops claiming, lets attempts in flight finish for up to `graceMs`, then gives back the
     * claims still open so another notifier (or this one restarted) sends them at once.
     */
    async stop(graceMs = 3000): Promise<void> {
      stopping = true;
      for (const t of timers) clearTimeout(t);
      const every = [...lanes.values(), ...retiring];
      for (const lane of every) wakeLane(lane);
      const all = every.flatMap((l) => [...(l.loop ? [l.loop] : []), ...l.inFlight]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(all), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      for (const lane of every) {
        for (const [id, token] of lane.held) await store.release(id, token).catch(() => {});
      }
    },
  };
}

export type DeliveryWorker = ReturnType<typeof deliveryWorkerFactory>;
