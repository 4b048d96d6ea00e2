import type { ServiceApp } from "@svc/kit";
import type { AccessPolicy } from "../domain/admission.js";
import { TOKEN_LIFETIME_S, grantedScopes, requestedScopes, type TokenSigner } from "../domain/oci-token.js";

const string = { type: "string" } as const;
const tokenSchema = {
  type: "object",
  properties: { token: string, access_token: string, expires_in: { type: "integer" }, issued_at: string },
} as const;

/**
 * `GET /v2/token?service=…&scope=…`, the token endpoint the Bearer challenge on /v2/ names
 * (docs/integration/oci.md). The admission has identified the caller (a key as the Basic
 * password, a signed-in person, or no one: svc.anonymous-rights); the token holds the scopes
 * asked for that the caller holds, and nothing for a scope it does not (never an error).
 * `service` is accepted and not checked: a token is only good at this deployment anyway.
 */
export function ociTokenRoute(app: ServiceApp, deps: { tenant: string; policy: AccessPolicy; tokens: Pick<TokenSigner, "sign"> }): void {
  app.get("/v2/token", { schema: { response: { 200: tokenSchema } } }, async (req, reply) => {
    const now = Date.now();
    const rights = req.callerRights;
    const asked = requestedScopes((req.query as Record<string, string | string[] | undefined>).scope);
    const scopes = deps.policy.auth ? grantedScopes(asked, deps.policy.anonymous, rights?.grants, now) : asked;
    const iat = Math.floor(now / 1000);
    const token = deps.tokens.sign({
      tenant: deps.tenant,
      kind: rights ? (rights.kind ?? "key") : "anonymous",
      id: rights?.id ?? "",
      scopes,
      iat,
      exp: iat + TOKEN_LIFETIME_S,
    });
    reply.header("cache-control", "no-store");
    return { token, access_token: token, expires_in: TOKEN_LIFETIME_S, issued_at: new Date(iat * 1000).toISOString() };
  });
}
