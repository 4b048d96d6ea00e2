import type { FastifyInstance } from "fastify";
import type { GrantSpec } from "@svc/grants";

export interface Capabilities {
  auth: boolean;
  readOnly: boolean;
  /** The keyless caller's grants in the `svc.anonymous-rights` grammar, or null when there are none. */
  anonymousRights: string | null;
}

export function capabilitiesOf(s: { auth: boolean; readOnly: boolean; anonymousRights: GrantSpec[] }): Capabilities {
  const text = s.anonymousRights.flatMap((g) => g.tokens.map((t) => (g.scope === "*" ? t : `${g.scope}=${t}`))).join(",");
  return { auth: s.auth, readOnly: s.readOnly, anonymousRights: s.auth && text !== "" ? text : null };
}

export function capabilityRoutes(app: FastifyInstance, caps: Capabilities): void {
  app.get(
    "/api/capabilities",
    {
      schema: {
        response: {
          200: {
            type: "object",
            properties: { auth: { type: "boolean" }, readOnly: { type: "boolean" }, anonymousRights: { type: ["string", "null"] } },
            required: ["auth", "readOnly", "anonymousRights"],
          },
        },
      },
    },
    async () => caps,
  );
}
