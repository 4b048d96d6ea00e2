import { Type } from "@sinclair/typebox";
import { forbidden } from "@svc/contracts";
import { Answer, Nullable, StringEnum, errorResponses, type ServiceApp } from "@svc/kit";
import type { LoginFlowService } from "../domain/login-flow-service.js";

const codeParam = Type.Object({ code: Type.String({ maxLength: 20 }) });

/**
 * The sign-in of a command-line client through the console (login-flow-service.ts): `POST
 * /api/logins` and its poll `GET /api/logins/<secret>` answer anyone (the gateway admits them
 * without a key: the secret is the credential); `/api/me/logins/<code>` only the signed-in
 * person who confirms it. The console's page is `/ui/cli-login?code=<code>`.
 */
export function loginRoutes(app: ServiceApp, svc: LoginFlowService): void {
  app.post(
    "/api/logins",
    {
      schema: {
        summary: "Start a command-line sign-in through the console (svc login; npm's web login starts one through its repository)",
        body: Nullable(Type.Object({ client: Type.Optional(StringEnum(["svc", "npm"] as const)), label: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false })),
        response: {
          201: Answer({ code: Type.String(), loginPath: Type.String(), donePath: Type.String(), expires: Type.String(), interval: Type.Integer() }),
          ...errorResponses(400, 413, 415),
        },
      },
    },
    async (req, reply) => {
      const started = await svc.start({ client: req.body?.client ?? "svc", label: req.body?.label });
      reply.code(201).header("cache-control", "no-store");
      return {
        code: started.code,
        loginPath: `/ui/cli-login?code=${encodeURIComponent(started.code)}`,
        donePath: `/api/logins/${started.secret}`,
        expires: started.expires,
        interval: started.interval,
      };
    },
  );

  app.get(
    "/api/logins/:secret",
    {
      schema: {
        summary: "Poll a sign-in: 202 while its person has not confirmed it, then 200 with a new personal key, once",
        params: Type.Object({ secret: Type.String({ maxLength: 100 }) }),
        response: { 200: Answer({ token: Type.String(), id: Type.String(), person: Type.String(), expires: Nullable(Type.String()) }), 202: Answer({ state: Type.String(), detail: Type.String() }), ...errorResponses(403, 404) },
      },
    },
    async (req, reply) => {
      const outcome = await svc.poll(req.params.secret);
      reply.header("cache-control", "no-store");
      if (outcome.state === "pending") return reply.code(202).header("retry-after", "2").send({ state: "pending", detail: "waiting for you to sign in and confirm in the console" });
      req.log.info({ credentialId: outcome.id, owner: outcome.person }, "personal key handed out to a command-line sign-in");
      return { token: outcome.token, id: outcome.id, person: outcome.person, expires: outcome.expires };
    },
  );

  const person = (kind: string, id: string) => {
    if (kind !== "person") throw forbidden("a sign-in is confirmed by a signed-in person, in the console");
    return id;
  };

  app.get(
    "/api/me/logins/:code",
    {
      schema: {
        params: codeParam,
        response: { 200: Answer({ code: Type.String(), client: Type.String(), label: Nullable(Type.String()), expires: Type.String(), confirmed: Type.Boolean() }), ...errorResponses(403, 404) },
      },
    },
    async (req) => {
      person(req.principal.kind, req.principal.id);
      return svc.describe(req.params.code);
    },
  );

  app.post(
    "/api/me/logins/:code",
    { schema: { params: codeParam, response: { 200: Answer({ confirmed: Type.Boolean() }), ...errorResponses(403, 404) } } },
    async (req) => {
      const who = person(req.principal.kind, req.principal.id);
      await svc.confirm(req.params.code, who);
      req.log.info({ code: req.params.code, principal: who }, "command-line sign-in confirmed");
      return { confirmed: true };
    },
  );
}
