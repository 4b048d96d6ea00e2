import type { Logger } from "pino";
import { newEventId, type Bus } from "@svc/kit";

/**
 * Tells every gateway a session ended, so none keeps admitting it from its cache. A lost event
 * costs little: the session is already ended in the table, so a gateway's next resolution (after
 * its short cache) finds nothing.
 */
export function sessionEventsFactory(deps: { bus: Pick<Bus, "publish">; tenant: string; log: Pick<Logger, "warn"> }) {
  return {
    async ended(sessionId: string): Promise<void> {
      const ok = await deps.bus.publish("credential.changed", {
        id: newEventId(),
        time: new Date().toISOString(),
        tenant: deps.tenant,
        subject: { kind: "session", id: sessionId },
        change: "ended",
      });
      if (!ok) deps.log.warn({ sessionId }, "could not announce a session's end: gateways forget it when their cache of it runs out");
    },
  };
}
export type SessionEvents = ReturnType<typeof sessionEventsFactory>;
