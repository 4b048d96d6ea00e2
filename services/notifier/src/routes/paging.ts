import { invalid } from "@svc/contracts";

export const MAX_PAGE = 500;

/** `limit` is an integer 1-500 (default 500); anything else is refused, never clamped. */
export function readLimit(limit: string | undefined): number {
  if (limit === undefined) return MAX_PAGE;
  const n = /^\d+$/.test(limit) ? Number(limit) : NaN;
  if (!(n >= 1 && n <= MAX_PAGE)) throw invalid("limit", "limit must be a whole number from 1 to 500");
  return n;
}
