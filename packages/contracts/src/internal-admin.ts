/** The admin service's internal route the gateway loads its rate ceilings from. */
export const ADMIN_INTERNAL = {
  rateLimits: "/internal/rate-limits",
} as const;

/** GET /internal/rate-limits. */
export interface RateLimitsDoc {
  /** svc.rate-limit as the admin service reads it: requests per minute per tenant. */
  default: number;
  /** Per-tenant overrides, requests per minute. */
  tenants: Record<string, number>;
}
