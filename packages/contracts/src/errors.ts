/**
 * One error model for every service: a code, its HTTP status, and the problem document
 * (RFC 9457, `application/problem+json`) the API answers with. Unexpected failures carry a
 * twelve-character reference and nothing else of their cause.
 */
export const ERROR_STATUS = {
  invalid_input: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  rate_limited: 429,
  unexpected: 500,
  bad_gateway: 502,
  unavailable: 503,
  gateway_timeout: 504,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail?: string;
  /** Set only on unexpected failures. */
  reference?: string;
  /** For invalid input: the field that was wrong. */
  field?: string;
}

const TITLES: Record<ErrorCode, string> = {
  invalid_input: "Invalid input",
  unauthenticated: "Authentication required",
  forbidden: "Forbidden",
  not_found: "Not found",
  method_not_allowed: "Method not allowed",
  request_timeout: "Request timeout",
  conflict: "Conflict",
  precondition_failed: "Precondition failed",
  payload_too_large: "Payload too large",
  unsupported_media_type: "Unsupported media type",
  range_not_satisfiable: "Range not satisfiable",
  rate_limited: "Too many requests",
  unexpected: "Unexpected failure",
  bad_gateway: "Bad gateway",
  unavailable: "Service unavailable",
  gateway_timeout: "Gateway timeout",
  insufficient_storage: "Insufficient storage",
};

export function problem(code: ErrorCode, detail?: string, extra?: Partial<Problem>): Problem {
  const p: Problem = { type: "about:blank", title: TITLES[code], status: ERROR_STATUS[code], code };
  if (detail !== undefined) p.detail = detail;
  return { ...p, ...extra };
}

/** An error a handler throws on purpose: a refusal the server meant, never given a reference. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly field: string | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(code: ErrorCode, message: string, opts: { field?: string; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.field = opts.field;
    this.headers = opts.headers;
  }
}

export const invalid = (field: string, message: string) => new ServiceError("invalid_input", message, { field });
export const notFound = (message: string) => new ServiceError("not_found", message);
export const forbidden = (message: string) => new ServiceError("forbidden", message);
export const conflict = (message: string) => new ServiceError("conflict", message);

const REF_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/** Twelve letters and digits; ambiguous characters left out so a person can read one out. */
export function failureReference(random: (n: number) => Uint8Array): string {
  const bytes = random(12);
  let out = "";
  for (let i = 0; i < 12; i++) out += REF_ALPHABET[(bytes[i] ?? 0) % REF_ALPHABET.length];
  return out;
}
export const REFERENCE_RE = /^[A-Z0-9]{12}$/;
