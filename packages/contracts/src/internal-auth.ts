import { Type, type Static } from "@sinclair/typebox";

/**
 * The auth service's internal routes, called by the gateway signed as the system principal
 * `gateway`: a key's resolution (what the gateway needs to decide a request) and the batches
 * of key use the gateway counts in memory. Each shape is declared once; its type is derived.
 */
export const AUTH_INTERNAL = {
  /** Route pattern of a key's resolution; `keyPath` builds a path to call. */
  key: "/internal/keys/:id",
  keyPath: (id: string) => `/internal/keys/${id}`,
  usage: "/internal/usage",
  /**
   * Route pattern of a person's resolution (a console session's rights): the person's own
   * grants and those of every group they belong to, `dependsOn` naming the person and each
   * group. The id is percent-encoded in the path (it holds a slash). Always 200: a person
   * nobody has granted anything resolves to no grants.
   */
  person: "/internal/people/:id",
  personPath: (id: string) => `/internal/people/${encodeURIComponent(id)}`,
} as const;



/** ISO-8601 instant or null; a type list rather than TypeBox's anyOf, the schema the routes always had. */
const instantOrNull = Type.Unsafe<string | null>({ type: ["string", "null"] });

/** A grant as the gateway compiles it: a scope, its tokens and when it lapses (ISO-8601 or null). */
export const ResolvedGrant = Type.Object({ scope: Type.String(), tokens: Type.Array(Type.String()), expires: instantOrNull });
export type ResolvedGrant = Static<typeof ResolvedGrant>;

/** A person or group a cached resolution must be dropped with (`credential.changed` names them). */
export const ResolutionDependency = Type.Object({ kind: Type.Unsafe<"person" | "group">(Type.String({ enum: ["person", "group"] })), id: Type.String() });
export type ResolutionDependency = Static<typeof ResolutionDependency>;

/** GET /internal/keys/:id: never the secret (it is not stored). 404 when the key is unknown. */
export const KeyResolution = Type.Object({
  id: Type.String(),
  tenant: Type.String(),
  // A plain string on the wire: the gateway reads "revoked" and "expired" and admits only "active".
  state: Type.Unsafe<"active" | "expired" | "revoked">(Type.String()),
  /** ISO-8601 instant, or null when the key never expires. */
  expires: instantOrNull,
  /** The source-address allowlist; empty when the key may be used from anywhere. */
  allowedAddresses: Type.Array(Type.String()),
  grants: Type.Array(ResolvedGrant),
  /** The key's label (null or absent: none), so the gateway's log lines and the audit trail name it without asking again. */
  label: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /**
   * The people and groups whose grants this resolution includes besides the key's own, so a
   * gateway drops it when one of them changes (and keeps it otherwise). Empty or absent today:
   * a key holds only its own grants.
   */
  dependsOn: Type.Optional(Type.Array(ResolutionDependency)),
  /** A personal key's person (null or absent: an administrator's key). */
  owner: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
export type KeyResolution = Static<typeof KeyResolution>;
/** As the route serialises it: like every answer (and each grant in it), fields are not enforced one by one. */
export const keyResolutionSchema = Type.Partial(Type.Object({ ...KeyResolution.properties, grants: Type.Array(Type.Partial(ResolvedGrant)) }));

export const USAGE_BATCH_MAX = 10_000;

/** One key's use since the last batch. */
export const KeyUsageRecord = Type.Object({
  /** Key id (SHA-256 hex). */
  id: Type.String(),
  count: Type.Integer(),
  /** ISO-8601 instant of the last use. */
  lastUsed: Type.String(),
  /** The source address of the last use. */
  address: Type.String(),
});
export type KeyUsageRecord = Static<typeof KeyUsageRecord>;

/** POST /internal/usage: answered 204. */
export const keyUsageBatchSchema = Type.Array(KeyUsageRecord, { maxItems: USAGE_BATCH_MAX });
export type KeyUsageBatch = Static<typeof keyUsageBatchSchema>;

/** GET /internal/people/:id. */
export const PersonResolution = Type.Object({
  id: Type.String(),
  tenant: Type.String(),
  grants: Type.Array(ResolvedGrant),
  dependsOn: Type.Array(ResolutionDependency),
});
export type PersonResolution = Static<typeof PersonResolution>;
