import { invalid } from "@svc/contracts";
import type { AddressMatcher, ServiceApp } from "@svc/kit";
import type { FastifyRequest } from "fastify";
import { stampForwardedOrigin } from "../proxy/forwarded-origin.js";

export interface StartedLogin {
  loginPath: string;
  donePath: string;
}

/** The origin the client addressed (as the artifacts service reads it, forwarded-origin.ts). */
function clientOrigin(request: FastifyRequest, trusted: AddressMatcher): string {
  stampForwardedOrigin(request, trusted);
  const host = request.headers["x-forwarded-host"];
  if (typeof host !== "string" || host === "") throw invalid("Host", "the request names no host (send a Host header): the login URLs are made from it");
  return `${request.headers["x-forwarded-proto"] === "https" ? "https" : "http"}://${host}`;
}

/**
 * npm's web login against a repository (`npm login --registry=<base>/repository/<name>/`, npm 9+'s
 * default, or `--auth-type=web`): `POST <registry>/-/v1/login` answers `{loginUrl, doneUrl}`.
 * The loginUrl is the console's confirmation page (sign-in first), the doneUrl the poll npm alone
 * holds (the auth service's login-routes.ts: 202 and Retry-After until confirmed, then 200
 * `{token}`, a new personal key, once). `GET <registry>/-/whoami` names the person a personal key
 * belongs to, else the key id. Answered here, where the key's rights are known.
 */
export function npmLoginRoutes(app: ServiceApp, deps: { startLogin: (label: string) => Promise<StartedLogin>; trustedProxies: AddressMatcher }): void {
  app.post("/repository/:repository/-/v1/login", async (req, reply) => {
    const { repository } = req.params as { repository: string };
    const origin = clientOrigin(req, deps.trustedProxies);
    const started = await deps.startLogin(`npm login (${repository})`);
    reply.header("cache-control", "no-store");
    return { loginUrl: origin + started.loginPath, doneUrl: origin + started.donePath };
  });

  app.get("/repository/:repository/-/whoami", async (req) => {
    const rights = req.callerRights;
    // The admission let only an identified caller with a read right here (an npm whoami without a key is its 401).
    return { username: rights?.owner ?? rights?.id ?? "anonymous" };
  });
}
