import { Type } from "@sinclair/typebox";
import type { GrantSpec } from "@svc/grants";
import { Nullable, errorResponses, type ServiceApp } from "@svc/kit";

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

export function capabilityRoutes(app: ServiceApp, caps: Capabilities): void {
  app.get(
    "/api/capabilities",
    {
      schema: {
        response: {
          200: Type.Object({ auth: Type.Boolean(), readOnly: Type.Boolean(), anonymousRights: Nullable(Type.String()) }),
          ...errorResponses(),
        },
      },
    },
    async () => caps,
  );
}
