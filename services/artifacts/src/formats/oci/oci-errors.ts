import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, type ErrorCode } from "@svc/contracts";
import { sendUnexpected } from "@svc/kit";

/** The error codes of the OCI distribution spec (v1.1, "Error Codes"), with the status each is answered with. */
export const OCI_STATUS = {
  BLOB_UNKNOWN: 404,
  BLOB_UPLOAD_INVALID: 400,
  BLOB_UPLOAD_UNKNOWN: 404,
  DIGEST_INVALID: 400,
  MANIFEST_BLOB_UNKNOWN: 400,
  MANIFEST_INVALID: 400,
  MANIFEST_UNKNOWN: 404,
  NAME_INVALID: 400,
  NAME_UNKNOWN: 404,
  SIZE_INVALID: 400,
  UNAUTHORIZED: 401,
  DENIED: 403,
  UNSUPPORTED: 405,
  TOOMANYREQUESTS: 429,
} as const;

export type OciCode = keyof typeof OCI_STATUS;

/** A refusal of the registry, in the OCI error body (`{"errors":[{"code","message","detail"}]}`). */
export class OciError extends Error {
  override readonly name = "OciError";
  readonly status: number;
  constructor(
    readonly code: OciCode,
    message: string,
    readonly opts: { status?: number; headers?: Record<string, string>; detail?: unknown } = {},
  ) {
    super(message);
    this.status = opts.status ?? OCI_STATUS[code];
  }
}

/** The service's own refusals (a read-only store, the screening gate, a bad path) as OCI codes. */
const FROM_SERVICE: Partial<Record<ErrorCode, OciCode>> = {
  unauthenticated: "UNAUTHORIZED",
  forbidden: "DENIED",
  not_found: "NAME_UNKNOWN",
  invalid_input: "NAME_INVALID",
  rate_limited: "TOOMANYREQUESTS",
  payload_too_large: "SIZE_INVALID",
  request_timeout: "BLOB_UPLOAD_INVALID",
  conflict: "DENIED",
};

export function sendOciError(reply: FastifyReply, status: number, code: string, message: string, detail: unknown = {}, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  return reply
    .code(status)
    .type("application/json")
    .send(JSON.stringify({ errors: [{ code, message, detail }] }));
}

/**
 * The error handler of the /v2/ routes: every refusal in the OCI error body with its code; an
 * unexpected failure as kit answers it (500 with its reference, logged under it), which renders
 * the OCI body on /v2/ too.
 */
export function ociErrorHandler(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof OciError) return sendOciError(reply, err.status, err.code, err.message, err.opts.detail ?? {}, err.opts.headers);
  if (err instanceof ServiceError) {
    const code = FROM_SERVICE[err.code] ?? "UNSUPPORTED";
    return sendOciError(reply, err.status, code, err.message, err.field ? { field: err.field } : {}, err.headers);
  }
  const fe = err as FastifyError;
  const status = typeof fe.statusCode === "number" ? fe.statusCode : 500;
  if (status >= 400 && status < 500) return sendOciError(reply, status, status === 413 ? "SIZE_INVALID" : "UNSUPPORTED", fe.message);
  return sendUnexpected(request, reply, err);
}
