import { Type } from "@sinclair/typebox";
import { CONSOLE_INTERNAL, forbidden, notFound, SessionResolution } from "@svc/contracts";
import { problemResponses, type ServiceApp } from "@svc/kit";
import type { SessionService } from "../domain/session-service.js";

/** The route only the gateway calls (signed as a system principal): what a session cookie stands for. */
export function internalRoutes(app: ServiceApp, sessions: Pick<SessionService, "resolve">): void {
  app.get(
    CONSOLE_INTERNAL.session,
    { schema: { params: Type.Object({ id: Type.String({ maxLength: 64 }) }), response: { 200: SessionResolution, ...problemResponses(401, 403, 404, 500) } } },
    async (req): Promise<SessionResolution> => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      const s = await sessions.resolve(req.params.id);
      if (!s) throw notFound("no live session with this id");
      return s;
    },
  );
}
