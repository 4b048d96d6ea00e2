import { Type, type TUnsafe } from "@sinclair/typebox";
import { invalid, type Problem } from "@svc/contracts";

/**
 * One way to page every list route: `after` (the cursor: the last id or name of the previous
 * page) and `limit` (1-500, default 500; anything else is refused, never clamped). Routes answer
 * `X-Next-Cursor` while more remain.
 */
export const MAX_PAGE = 500;

export const pagingQuerySchema = Type.Object(
  { after: Type.Optional(Type.String({ maxLength: 1024 })), limit: Type.Optional(Type.String()) },
  { additionalProperties: false },
);

export function readLimit(limit: string | undefined): number {
  if (limit === undefined) return MAX_PAGE;
  const n = /^\d+$/.test(limit) ? Number(limit) : NaN;
  if (!(n >= 1 && n <= MAX_PAGE)) throw invalid("limit", "limit must be a whole number from 1 to 500");
  return n;
}

export function readPaging(q: { after?: string; limit?: string }): { after?: string; limit: number } {
  return { after: q.after || undefined, limit: readLimit(q.limit) };
}

/** The problem document every service answers refusals and failures with (registered by createBaseApp). */
export const problemSchema = Type.Partial(
  Type.Object({
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String(),
    detail: Type.String(),
    field: Type.String(),
    reference: Type.String(),
  }),
  { $id: "problem" },
);

// Refusals are sent as ready-made JSON text, never through these schemas: they document the
// answers (for the OpenAPI document) and type what a handler could return for them.
const problemRef: TUnsafe<Problem> = Type.Unsafe<Problem>({ $ref: "problem#" });

/** Problem-document responses for exactly these statuses (routes other services call directly). */
export function problemResponses<const S extends readonly number[]>(...statuses: S): { [K in S[number]]: TUnsafe<Problem> } {
  return Object.fromEntries(statuses.map((s) => [s, problemRef])) as { [K in S[number]]: TUnsafe<Problem> };
}

/**
 * Problem-document responses of a route behind the gateway: the given statuses, plus what any
 * such route may answer: 401 (no valid key, or no gateway identity), 403 (a right missing),
 * 429 (the gateway's rate limit) and 500 (an unexpected failure, under a reference). Routes
 * taking a JSON body add 400, 413 (over 1 MiB) and 415 (not JSON).
 */
export function errorResponses<const S extends readonly number[]>(...statuses: S) {
  return problemResponses(...statuses, 401, 403, 429, 500);
}
