import { randomBytes } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ERROR_STATUS, PROBLEM_CONTENT_TYPE, ServiceError, failureReference, problem, type ErrorCode, type Problem } from "@svc/contracts";
import { dependencyFailure } from "./dependency-failure.js";

/**
 * Each client surface gets errors in its own format: a problem document on the API, an OCI error
 * body on container routes, a JSON error document for a package client that asks for JSON on an
 * artifact route (npm does, and prints the `error` field), Cargo's error body for cargo (its
 * registry web API's `{"errors":[{"detail"}]}`, which cargo prints), plain text for everything
 * else (curl, Maven, a browser).
 */
export type Surface = "api" | "oci" | "package" | "cargo" | "text";

export function surfaceOf(url: string, accept?: string | string[], userAgent?: string): Surface {
  if (url.startsWith("/api/") || url === "/api") return "api";
  if (url.startsWith("/v2/") || url === "/v2") return "oci";
  // cargo names itself on every request (the index, the API, downloads), and asks for JSON on none.
  if (url.startsWith("/repository/") && userAgent !== undefined && userAgent.startsWith("cargo/")) return "cargo";
  if (url.startsWith("/repository/") && accept !== undefined && /json/i.test(String(accept))) return "package";
  // npm, pnpm and yarn send no JSON Accept on a publish or a dist-tag change, yet print the
  // `error` of a JSON answer (and nothing of a text one).
  if (url.startsWith("/repository/") && userAgent !== undefined && NPM_CLIENT.test(userAgent)) return "package";
  return "text";
}

const NPM_CLIENT = /^(?:npm|pnpm|yarn|bun)\//;

const surfaceOfRequest = (request: FastifyRequest): Surface => surfaceOf(request.url, request.headers.accept, request.headers["user-agent"]);

export const newReference = (): string => failureReference((n) => randomBytes(n));

const OCI_CODES: Partial<Record<ErrorCode, string>> = {
  unauthenticated: "UNAUTHORIZED",
  forbidden: "DENIED",
  not_found: "NAME_UNKNOWN",
  invalid_input: "UNSUPPORTED",
  rate_limited: "TOOMANYREQUESTS",
};

/** A problem in one sentence, as plain text and package clients show it. */
const sentenceOf = (p: Problem): string =>
  p.reference ? `${p.code === "unexpected" ? "Unexpected failure" : (p.detail ?? p.title)}. Reference: ${p.reference}` : (p.detail ?? p.title);

/** A problem as the caller's surface shows it: the content type and the body. */
export function renderProblem(surface: Surface, p: Problem): { type: string; body: string } {
  const sentence = sentenceOf(p);
  switch (surface) {
    case "api":
      return { type: PROBLEM_CONTENT_TYPE, body: JSON.stringify(p) };
    case "oci":
      return {
        type: "application/json",
        body: JSON.stringify({ errors: [{ code: OCI_CODES[p.code] ?? "UNKNOWN", message: sentence, detail: p.reference ? { reference: p.reference } : {} }] }),
      };
    case "cargo":
      return { type: "application/json", body: JSON.stringify({ errors: [{ detail: sentence }] }) };
    case "package":
      return { type: "application/json", body: JSON.stringify(p.reference ? { error: sentence, reference: p.reference } : { error: sentence }) };
    default:
      return { type: "text/plain; charset=utf-8", body: `${sentence}\n` };
  }
}

/**
 * The reason phrase of a refusal on an artifact path, from the artifacts service to the gateway:
 * the status line's own phrase does not survive the proxy (undici does not read it). The gateway
 * turns it back into the phrase and drops the header.
 */
export const STATUS_REASON_HEADER = "service-status-reason";

/** A sentence as a status line's reason phrase: visible ASCII and spaces, one line, bounded. */
export const asReasonPhrase = (sentence: string): string =>
  sentence
    .replace(/[^\x20-\x7e]+/g, " ")
    .trim()
    .slice(0, 300);

/** Writes a problem to the reply in the caller's surface format. */
export function sendProblem(reply: FastifyReply, surface: Surface, p: Problem, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  const { type, body } = renderProblem(surface, p);
  // Maven, twine and pip print the status line's reason phrase of a refusal, never its body: on an
  // artifact path the phrase is the refusal itself, as PyPI does ("400 File already exists ..."),
  // and STATUS_REASON_HEADER carries it through the gateway (which cannot relay a phrase).
  if ((surface === "text" || surface === "package") && (reply.request as FastifyRequest | undefined)?.url.startsWith("/repository/")) {
    const reason = asReasonPhrase(sentenceOf(p));
    reply.raw.statusMessage = reason;
    reply.header(STATUS_REASON_HEADER, reason);
  }
  return reply.code(p.status).type(type).send(body);
}

function codeForStatus(status: number): ErrorCode {
  const hit = (Object.entries(ERROR_STATUS) as [ErrorCode, number][]).find(([, s]) => s === status);
  return hit ? hit[0] : status >= 500 ? "unexpected" : "invalid_input";
}

/** Seconds a caller is asked to wait when a dependency does not answer. */
const RETRY_AFTER_DOWN = "5";

/**
 * Logs an unexpected failure under a fresh reference and answers in the caller's format: 503
 * with Retry-After when a dependency does not answer, 507 when the store is full, else 500.
 * The response never carries the cause: no message, stack, path or store key.
 */
export function sendUnexpected(request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  const reference = newReference();
  const down = dependencyFailure(err);
  const answer = down === "unavailable" ? 503 : down === "full" ? 507 : 500;
  request.log.error({ err, reference, status: answer }, `Unexpected failure ${reference} while ${request.method} ${request.url}`);
  const surface = surfaceOfRequest(request);
  if (down === "unavailable") {
    return sendProblem(reply, surface, problem("unavailable", "a service this request needs is not answering: retry shortly", { reference }), { "retry-after": RETRY_AFTER_DOWN });
  }
  if (down === "full") return sendProblem(reply, surface, problem("insufficient_storage", "the store is full: nothing was written", { reference }));
  return sendProblem(reply, surface, problem("unexpected", undefined, { reference }));
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
  // Ajv's "must be equal to one of the allowed values" leaves the caller guessing: name them.
  const allowed = Array.isArray(params?.allowedValues) ? params.allowedValues : undefined;
  const message = allowed ? `must be one of ${allowed.map(String).join(", ")}` : (first?.message ?? "is invalid");
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

/**
 * The router's own refusals (a path that is not valid percent-encoding, a parameter too long),
 * which fastify answers before any hook runs: in the caller's surface format like every other
 * refusal (fastify's `frameworkErrors`).
 */
export function answerFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const surface = surfaceOfRequest(request);
  if (err.code === "FST_ERR_BAD_URL") {
    sendProblem(reply, surface, problem("invalid_input", "the path is not valid percent-encoding", { field: "path" }));
  } else if (err.code === "FST_ERR_MAX_PARAM_LENGTH") {
    sendProblem(reply, surface, problem("invalid_input", "the path is too long", { field: "path", status: 414 }));
  } else {
    sendUnexpected(request, reply, err);
  }
}

const PARSER_REFUSALS: Record<string, [status: number, detail: string]> = {
  HPE_HEADER_OVERFLOW: [431, "the request headers are too large: send fewer or shorter headers"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "the request did not arrive in time"],
  ERR_HTTP_HEADERS_TIMEOUT: [408, "the request headers did not arrive in time"],
};

/**
 * Node's HTTP parser's refusals (headers too large, a malformed request, a request that did not
 * arrive in time), answered on the socket since there is no request object yet: in the surface
 * the request line names, when the parser kept it, else as plain text. Replaces fastify's
 * default, which answers framework JSON whatever was asked.
 */
export function answerClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, detail] = PARSER_REFUSALS[err.code ?? ""] ?? [400, "the request is not well-formed HTTP/1.1"];
  const head = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString("latin1", 0, Math.min(err.rawPacket.length, 8192)) : "";
  const target = /^[A-Z]+ (\S+) HTTP\//.exec(head)?.[1] ?? "";
  const accept = /\r\naccept:[ \t]*([^\r]*)/i.exec(head)?.[1];
  const { type, body } = renderProblem(surfaceOf(target, accept), problem(codeForStatus(status), detail, { status }));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** A CONNECT (authority-form target): Node hands it to a `connect` listener or drops the socket unanswered; we answer 400. */
export function refuseConnect(_req: unknown, socket: Duplex): void {
  const { type, body } = renderProblem("text", problem("invalid_input", "CONNECT is not served here: this is not a forward proxy", { status: 400 }));
  socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
