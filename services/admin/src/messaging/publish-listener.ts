import type { Logger } from "pino";
import type { Bus } from "@svc/kit";
import type { Actor } from "@svc/contracts";
import type { MeterSampleStore } from "../store/meter-sample-store.js";

/** `key:<id>`, `person:<id>`, `system:<service>`, `anonymous`: never a secret, only an id. */
export const actorText = (a: Actor): string => (a.kind === "anonymous" ? "anonymous" : `${a.kind}:${a.id}`);

/**
 * Keeps the publishes this node hears of for the console's home page. Every admin node hears
 * each one and the event's id keeps it once; a publish made while no admin node listened is not
 * listed (the list is a glance at recent activity, the artifacts service's index is the record).
 */
export function listenForPublishes(deps: { bus: Pick<Bus, "subscribe">; store: Pick<MeterSampleStore, "addPublish">; log: Pick<Logger, "warn"> }): void {
  deps.bus.subscribe("artifact.published", (e) => {
    deps.store
      .addPublish({ id: e.id, time: new Date(e.time), repository: e.repository, path: e.path, size: e.size, actor: actorText(e.actor) })
      .catch((err: unknown) => deps.log.warn({ err, repository: e.repository, path: e.path }, "could not record a publish for the console's home page"));
  });
}
