import { invalid } from "@svc/contracts";

/**
 * One way to page every list route: `after` (the cursor: the last id or name of the previous
 * page) and `limit` (1-500, default 500; anything else is refused, never clamped). Routes answer
 * `X-Next-Cursor` while more remain.
 */
export const MAX_PAGE = 500;

export const pagingQuerySchema = {
  type: "object",
  properties: { after: { type: "string", maxLength: 1024 }, limit: { type: "string" } },
  additionalProperties: false,
} as const;

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
export const problemSchema = {
  $id: "problem",
  type: "object",
  properties: {
    type: { type: "string" },
    title: { type: "string" },
    status: { type: "integer" },
    code: { type: "string" },
    detail: { type: "string" },
    field: { type: "string" },
    reference: { type: "string" },
  },
};

const problemRef = { $ref: "problem#" } as const;
/** Response schemas for the error statuses of an administrative route. */
export const errorResponses = { 400: problemRef, 401: problemRef, 403: problemRef, 404: problemRef, 409: problemRef, 500: problemRef };
