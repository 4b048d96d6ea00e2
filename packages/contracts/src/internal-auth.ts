/**
 * The auth service's internal routes, called by the gateway signed as the system principal
 * `gateway`: a key's resolution (what the gateway needs to decide a request) and the batches
 * of key use the gateway counts in memory.
 */
export const AUTH_INTERNAL = {
  /** Route pattern of a key's resolution; `keyPath` builds a path to call. */
  key: "/internal/keys/:id",
  keyPath: (id: string) => `/internal/keys/${id}`,
  usage: "/internal/usage",
} as const;

/** A grant as the gateway compiles it: a scope, its tokens and when it lapses (ISO-8601 or null). */
export interface ResolvedGrant {
  scope: string;
  tokens: string[];
  expires: string | null;
}

/** GET /internal/keys/:id: never the secret (it is not stored). 404 when the key is unknown. */
export interface KeyResolution {
  id: string;
  tenant: string;
  state: "active" | "expired" | "revoked";
  /** ISO-8601 instant, or null when the key never expires. */
  expires: string | null;
  /** The source-address allowlist; empty when the key may be used from anywhere. */
  allowedAddresses: string[];
  grants: ResolvedGrant[];
  /**
   * The people and groups whose grants this resolution includes besides the key's own, so a
   * gateway drops it when one of them changes (and keeps it otherwise). Empty or absent today:
   * a key holds only its own grants.
   */
  dependsOn?: ResolutionDependency[];
}

/** A person or group a cached resolution must be dropped with (`credential.changed` names them). */
export interface ResolutionDependency {
  kind: "person" | "group";
  id: string;
}

/** One key's use since the last batch. */
export interface KeyUsageRecord {
  /** Key id (SHA-256 hex). */
  id: string;
  count: number;
  /** ISO-8601 instant of the last use. */
  lastUsed: string;
  /** The source address of the last use. */
  address: string;
}

/** POST /internal/usage: answered 204. */
export type KeyUsageBatch = KeyUsageRecord[];

export const USAGE_BATCH_MAX = 10_000;

export const keyUsageBatchSchema = {
  type: "array",
  maxItems: USAGE_BATCH_MAX,
  items: {
    type: "object",
    properties: { id: { type: "string" }, count: { type: "integer" }, lastUsed: { type: "string" }, address: { type: "string" } },
    required: ["id", "count", "lastUsed", "address"],
  },
} as const;
