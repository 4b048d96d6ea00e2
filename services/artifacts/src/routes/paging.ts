import { invalid } from "@svc/contracts";

export const MAX_PAGE = 500;

export const pagingQuerySchema = {
  type: "object",
  properties: { after: { type: "string", maxLength: 1024 }, limit: { type: "string" } },
  additionalProperties: false,
} as const;

/** `limit` is an integer 1-500 (default 500); anything else is refused, never clamped. */
export function readPaging(q: { after?: string; limit?: string }): { after?: string; limit: number } {
  let limit = MAX_PAGE;
  if (q.limit !== undefined) {
    if (!/^\d+$/.test(q.limit)) throw invalid("limit", "limit must be a whole number from 1 to 500");
    limit = Number(q.limit);
    if (limit < 1 || limit > MAX_PAGE) throw invalid("limit", "limit must be a whole number from 1 to 500");
  }
  return { after: q.after || undefined, limit };
}

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
const problem = { $ref: "problem#" } as const;
export const errors = { 400: problem, 401: problem, 403: problem, 404: problem, 409: problem, 500: problem };
