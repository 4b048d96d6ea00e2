import { AckPolicy, connect, DeliverPolicy, JSONCodec, type NatsConnection } from "nats";
import { eventParsers, streamFor, type ArtifactEvent, type WalkRunView } from "@svc/contracts";
import { keyId } from "@svc/keys";
import { identityHeaders, natsConnectOptions } from "@svc/kit";
import type { ServiceName } from "@svc/devstack/service-runner";
import type { Suite } from "./suite.js";

/**
 * Calls an admin route served by an upstream other than the admin service (walks: walker;
 * repository retention: artifacts). Through the gateway once it routes the prefix there;
 * until then straight to the service, signed as the gateway would sign the bootstrap key.
 */
export async function adminCaller(s: Suite, prefix: string, service: ServiceName) {
  const probe = await s.call("GET", prefix, { key: s.bootstrapKey });
  const routed = probe.status === 200;
  const principal = `key:${s.tenant}:${keyId(s.bootstrapKey)}`;
  const call = async (method: string, path: string, body?: unknown): Promise<Response> => {
    if (routed) return s.call(method, path, { key: s.bootstrapKey, body: body as object | undefined });
    const json = body === undefined ? undefined : JSON.stringify(body);
    const headers = identityHeaders(s.internalSecret, method, path, principal, Date.now(), json === undefined ? {} : { body: json, headers: { "content-type": "application/json" } });
    return fetch(`${s.urls[service]}${path}`, { method, headers, body: json });
  };
  return { call, routed };
}

/** A request to an upstream's internal route, signed as a system principal. */
export function systemCall(s: Suite, service: ServiceName, method: string, path: string): Promise<Response> {
  return fetch(`${s.urls[service]}${path}`, { method, headers: identityHeaders(s.internalSecret, method, path, `system:${s.tenant}:e2e`) });
}

/** Polls `check` until it returns a value (not undefined), at most `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ""}`);
}

/** Runs the walk `name` now through the walks API (`call`: adminCaller's) and waits for its run to end. */
export async function runWalk(call: (method: string, path: string, body?: unknown) => Promise<Response>, name: string): Promise<WalkRunView> {
  const started = await call("POST", `/api/walks/${name}/run`);
  if (started.status !== 202) throw new Error(`walk ${name} not started: ${started.status} ${await started.text()}`);
  const { id } = (await started.json()) as WalkRunView;
  return eventually(
    `walk ${name} to end`,
    async () => ((await (await call("GET", `/api/walks/${name}/runs`)).json()) as WalkRunView[]).find((r) => r.id === id && r.outcome !== "running"),
    60_000,
  );
}

/**
 * Reads the tenant's artifact events from JetStream (`svc.<tenant>.artifact.>`, what the
 * stream stored, so a message NATS deduplicated by id shows once), keeping those `keep` wants.
 */
export async function collectArtifactEvents(natsUrl: string, tenant: string, keep: (e: ArtifactEvent) => boolean) {
  const nc: NatsConnection = await connect(natsConnectOptions(natsUrl));
  // An ephemeral pull consumer (ordered consumers need a newer server than Debian's 2.9).
  const jsm = await nc.jetstreamManager();
  const info = await jsm.consumers.add(streamFor(tenant), {
    filter_subject: `svc.${tenant}.artifact.>`,
    deliver_policy: DeliverPolicy.All,
    ack_policy: AckPolicy.None,
    inactive_threshold: 60_000_000_000,
  });
  const consumer = await nc.jetstream().consumers.get(streamFor(tenant), info.name);
  const messages = await consumer.consume();
  const codec = JSONCodec<unknown>();
  const events: ArtifactEvent[] = [];
  const subjects: string[] = [];
  void (async () => {
    for await (const m of messages) {
      const raw = codec.decode(m.data) as { kind?: string };
      const parse = eventParsers[raw.kind as ArtifactEvent["kind"]];
      const e = parse ? (parse(raw) as ArtifactEvent | undefined) : undefined;
      if (!e) throw new Error(`an artifact event that does not match its schema on ${m.subject}: ${JSON.stringify(raw)}`);
      if (keep(e)) {
        events.push(e);
        subjects.push(m.subject);
      }
    }
  })();
  return {
    events,
    subjects,
    /** Waits until `done(events)` holds. */
    until: (what: string, done: (events: ArtifactEvent[]) => boolean, timeoutMs = 30_000) => eventually(what, async () => (done(events) ? events : undefined), timeoutMs),
    close: async () => {
      await messages.close().catch(() => {});
      await nc.close();
    },
  };
}
