import { randomBytes } from "node:crypto";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ERROR_STATUS, PROBLEM_CONTENT_TYPE, ServiceError, failureReference, problem, type ErrorCode, type Problem } from "@svc/contracts";

/**
 * Each client surface gets errors in its own format: a problem document on the API, an OCI error
 * body on container routes, a JSON error document for a package client that asks for JSON on an
 * artifact route (npm does, and prints the `error` field), plain text for everything else
 * (curl, Maven, a browser).
 */
export type Surface = "api" | "oci" | "package" | "text";

export function surfaceOf(url: string, accept?: string | string[]): Surface {
  if (url.startsWith("/api/") || url === "/api") return "api";
  if (url.startsWith("/v2/") || url === "/v2") return "oci";
  if (url.startsWith("/repository/") && accept !== undefined && /json/i.test(String(accept))) return "package";
  return "text";
}

const surfaceOfRequest = (request: FastifyRequest): Surface => surfaceOf(request.url, request.headers.accept);

export const newReference = (): string => failureReference((n) => randomBytes(n));

const OCI_CODES: Partial<Record<ErrorCode, string>> = {
  unauthenticated: "UNAUTHORIZED",
  forbidden: "DENIED",
  not_found: "NAME_UNKNOWN",
  invalid_input: "UNSUPPORTED",
  rate_limited: "TOOMANYREQUESTS",
};

/** Writes a problem to the reply in the caller's surface format. */
export function sendProblem(reply: FastifyReply, surface: Surface, p: Problem, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  reply.code(p.status);
  const sentence = p.reference ? `Unexpected failure. Reference: ${p.reference}` : (p.detail ?? p.title);
  switch (surface) {
    case "api":
      return reply.type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(p));
    case "oci":
      return reply.type("application/json").send(
        JSON.stringify({ errors: [{ code: OCI_CODES[p.code] ?? "UNKNOWN", message: sentence, detail: p.reference ? { reference: p.reference } : {} }] }),
      );
    case "package":
      return reply.type("application/json").send(JSON.stringify(p.reference ? { error: sentence, reference: p.reference } : { error: sentence }));
    default:
      return reply.type("text/plain; charset=utf-8").send(`${sentence}\n`);
  }
}

function codeForStatus(status: number): ErrorCode {
  const hit = (Object.entries(ERROR_STATUS) as [ErrorCode, number][]).find(([, s]) => s === status);
  return hit ? hit[0] : status >= 500 ? "unexpected" : "invalid_input";
}

/**
 * Logs an unexpected failure under a fresh reference and answers 500 in the caller's format.
 * The response never carries the cause: no message, stack, path or store key.
 */
export function sendUnexpected(request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  const reference = newReference();
  request.log.error({ err, reference }, `Unexpected failure ${reference} while ${request.method} ${request.url}`);
  return sendProblem(reply, surfaceOfRequest(request), problem("unexpected", undefined, { reference }));
}

/**
 * A schema refusal in words a caller can act on: it names the field as the caller wrote it
 * (`tokens[0]`, `grants[1].scope`), never fastify's internal `body/…` pointer.
 */
export function validationProblem(fe: Pick<FastifyError, "validation" | "validationContext">): Problem {
  const first = fe.validation?.[0];
  const params = first?.params as Record<string, unknown> | undefined;
  const at = (first?.instancePath ?? "")
    .split("/")
    .filter((s) => s !== "")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((name, seg) => (/^\d+$/.test(seg) ? `${name}[${seg}]` : name ? `${name}.${seg}` : seg), "");
  const context = fe.validationContext ?? "body";
  const where = context === "body" ? "the body" : context === "querystring" ? "the query" : context === "params" ? "the path" : `the ${context}`;
  const within = (name: string) => (at ? `${at}.${name}` : name);
  if (typeof params?.additionalProperty === "string") {
    return problem("invalid_input", `unknown field "${within(params.additionalProperty)}"`, { field: within(params.additionalProperty) });
  }
  if (typeof params?.missingProperty === "string") {
    return problem("invalid_input", `${where} lacks the required field "${within(params.missingProperty)}"`, { field: within(params.missingProperty) });
  }
  const message = first?.message ?? "is invalid";
  return problem("invalid_input", at ? `${at} ${message}` : `${where} ${message}`, { field: at || context });
}

/** One error handler for every service. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | ServiceError | Error, request, reply) => {
    const surface = surfaceOfRequest(request);
    if (err instanceof ServiceError) {
      const extra = err.field ? { field: err.field } : {};
      return sendProblem(reply, surface, problem(err.code, err.message, extra), err.headers);
    }
    const fe = err as FastifyError;
    if (fe.validation) return sendProblem(reply, surface, validationProblem(fe));
    if (fe.code === "FST_ERR_CTP_EMPTY_JSON_BODY") {
      return sendProblem(reply, surface, problem("invalid_input", "the body is empty: send a JSON object (or no Content-Type when there is nothing to send)", { field: "body" }));
    }
    const status = typeof fe.statusCode === "number" ? fe.statusCode : 500;
    if (status >= 400 && status < 500) {
      // Fastify's own refusals (bad JSON, wrong content type, body too large): the message is safe.
      return sendProblem(reply, surface, problem(codeForStatus(status), fe.message, { status }));
    }
    return sendUnexpected(request, reply, err);
  });

  app.setNotFoundHandler((request, reply) => {
    sendProblem(reply, surfaceOfRequest(request), problem("not_found", `no route for ${request.method} ${request.url.split("?")[0]}`));
  });
}
