import { Type } from "@sinclair/typebox";
import { ServiceError } from "@svc/contracts";
import { Answer, StringEnum, errorResponses, type ServiceApp } from "@svc/kit";
import type { IdentityService } from "../domain/identity-service.js";
import { grantProperties } from "./grant-schemas.js";

const meSchema = Answer({
  kind: StringEnum(["key", "person"] as const),
  id: Type.String({ description: "The key id (SHA-256 hex) or the person id (`oidc/<sub>`, `oauth/<id>`)" }),
  tenant: Type.String(),
  label: Type.String(),
  grants: Type.Array(Answer({ ...grantProperties, via: Type.String({ description: '"key", "direct" or "group:<name>"' }) })),
});

/**
 * `GET /api/me`: any identified caller, a key or a signed-in person, whatever rights it holds
 * (the gateway admits it without one); the console's home and no-access screen, and `svc whoami`.
 */
export function meRoutes(app: ServiceApp, identity: Pick<IdentityService, "whoAmI">): void {
  app.get(
    "/api/me",
    { schema: { summary: "Who the caller is (a key or a signed-in person) and every grant it holds now, with where each comes from", response: { 200: meSchema, ...errorResponses() } } },
    async (req, reply) => {
      const me = await identity.whoAmI(req.principal);
      if (!me) throw new ServiceError("unauthenticated", "a key or a console session is required to say who you are");
      reply.header("cache-control", "no-store");
      return me;
    },
  );
}
