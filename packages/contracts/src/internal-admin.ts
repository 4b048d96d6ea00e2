import { Type, type Static } from "@sinclair/typebox";

/** The admin service's internal route the gateway loads its rate ceilings from. */
export const ADMIN_INTERNAL = {
  rateLimits: "/internal/rate-limits",
  settings: "/internal/settings",
} as const;

/** GET /internal/rate-limits. */
export const RateLimitsDoc = Type.Object({
  /** svc.rate-limit as the admin service reads it: requests per minute per tenant. */
  default: Type.Integer(),
  /** Per-tenant overrides, requests per minute (a map: TypeBox's Record would name a key pattern the route never had). */
  tenants: Type.Unsafe<Record<string, number>>({ type: "object", additionalProperties: { type: "integer" } }),
});
export type RateLimitsDoc = Static<typeof RateLimitsDoc>;
/** As the route serialises it: like every answer, its fields are not enforced one by one. */
export const rateLimitsDocSchema = Type.Partial(RateLimitsDoc);

/**
 * GET /internal/settings: the run-time settings' stored values (PUT /api/settings/<name>), as
 * text their catalog parsers read, by full name (`svc.malware-action`). A setting never changed
 * at run time is absent: each node keeps the value it read at start.
 */
export const StoredSettingsDoc = Type.Object({
  stored: Type.Unsafe<Record<string, string>>({ type: "object", additionalProperties: { type: "string" } }),
  /** Per-tenant overrides (`PUT /api/settings/<name>?tenant=<t>`): tenant -> full name -> text. */
  tenants: Type.Optional(
    Type.Unsafe<Record<string, Record<string, string>>>({ type: "object", additionalProperties: { type: "object", additionalProperties: { type: "string" } } }),
  ),
});
export type StoredSettingsDoc = Static<typeof StoredSettingsDoc>;
