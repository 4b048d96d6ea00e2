import { LIMITS } from "./limits.js";
import { Type, type Static } from "@sinclair/typebox";

/**
 * The artifacts service's internal routes, called by the walker signed as the system principal
 * `walker`: the walker reads and changes artifact metadata only through them (one owner per
 * table). Each shape is declared once, as the TypeBox schema the routes validate and serialise
 * with; its type is derived from it.
 */
export const ARTIFACTS_INTERNAL = {
  repositories: "/internal/repositories",
  /** Route pattern of a repository's metadata pages; `artifactsPath` builds a path to call. */
  artifacts: "/internal/repositories/:name/artifacts",
  artifactsPath: (repository: string) => `/internal/repositories/${encodeURIComponent(repository)}/artifacts`,
  remove: "/internal/artifacts/remove",
  forget: "/internal/artifacts/forget",
  /** Route pattern of a repository's format backfill; `backfillPath` builds a path to call. */
  backfill: "/internal/repositories/:name/backfill",
  backfillPath: (repository: string) => `/internal/repositories/${encodeURIComponent(repository)}/backfill`,
  /** Route pattern of a repository's format collection (OCI garbage collection and image retention); `collectPath` builds a path to call. */
  collect: "/internal/repositories/:name/collect",
  collectPath: (repository: string) => `/internal/repositories/${encodeURIComponent(repository)}/collect`,
  reclaimBlobs: "/internal/blobs/reclaim",
  verifyBlob: "/internal/blobs/verify",
  /** The repositories whose `scopeFromPath` is on (ScopeFromPathDoc), read by every gateway. */
  scopeFromPath: "/internal/scope-from-path",
} as const;

/**
 * `GET /internal/scope-from-path`: the repositories authorised by the repository their path
 * names when a request sends no Service-Repository-Name (`PATCH /api/repositories/<name>
 * {"scopeFromPath": true}`). The gateway loads it at start, every 30 s, and applies each
 * RepositoryScopeChange it hears on the control subject `repositories` at once.
 */
export interface ScopeFromPathDoc {
  repositories: string[];
}

/** Announced on the control subject `repositories` when a repository is created, changed or removed (removed: false). */
export interface RepositoryScopeChange {
  repository: string;
  scopeFromPath: boolean;
}

/** Set on a full metadata page: the `after` of the next one. */
export const NEXT_CURSOR_HEADER = "x-next-cursor";

/** A repository's retention policy as stored and as the walker's retention job reads it. */
export const RetentionPolicy = Type.Object({
  path: Type.Optional(Type.String()),
  keepVersions: Type.Optional(Type.Integer()),
  maxAge: Type.Optional(Type.String()),
  unusedFor: Type.Optional(Type.String()),
});
export type RetentionPolicy = Static<typeof RetentionPolicy>;

/**
 * One item of GET /internal/repositories. The route passes the stored policy on whole, never
 * cut by a schema, so it serialises with its own loose schema rather than this one.
 */
export const RepositorySummary = Type.Object({ name: Type.String(), format: Type.String(), retention: Type.Union([RetentionPolicy, Type.Null()]) });
export type RepositorySummary = Static<typeof RepositorySummary>;

/** One item of a metadata page (GET /internal/repositories/:name/artifacts?after=&limit=), in byte order of the path. */
export const ArtifactMeta = Type.Object({
  path: Type.String(),
  size: Type.Integer(),
  sha256: Type.String(),
  /** ISO instant of the last publish; also the version's identity for retention. */
  updated: Type.String(),
  // A type list rather than TypeBox's anyOf: the schema the route always had.
  lastDownloaded: Type.Unsafe<string | null>({ type: ["string", "null"] }),
  /** Sent on every row; the walker's jobs do not read it. */
  downloads: Type.Optional(Type.Integer()),
  held: Type.Boolean(),
});
export type ArtifactMeta = Static<typeof ArtifactMeta>;
/** As the route serialises a page: like every answer, fields are not enforced one by one. */
export const artifactsPageSchema = Type.Array(Type.Partial(ArtifactMeta));

export const artifactsPageQuerySchema = Type.Object(
  {
    after: Type.Optional(Type.String({ maxLength: LIMITS.artifactPath })),
    /** Decimal, 1 to 5000; 1000 when absent. */
    limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,5}$" })),
  },
  { additionalProperties: false },
);
export type ArtifactsPageQuery = Static<typeof artifactsPageQuerySchema>;

const where = { repository: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }), path: Type.String({ minLength: 1, maxLength: LIMITS.artifactPath }) };
const hex64 = () => Type.String({ pattern: "^[0-9a-f]{64}$" });

/** POST /internal/artifacts/remove: removes a version only if it is still the one the walk saw. */
export const retentionRemoveRequestSchema = Type.Object(
  { ...where, reason: Type.Unsafe<"retention">({ type: "string", enum: ["retention"] }), sha256: hex64(), updated: Type.String({ maxLength: 40 }) },
  { additionalProperties: false },
);
export type RetentionRemoveRequest = Static<typeof retentionRemoveRequestSchema>;
/** `size` when removed; `why` ("gone", "held" or "changed") when not. */
export const RetentionRemoveResult = Type.Object({ removed: Type.Boolean(), size: Type.Optional(Type.Integer()), why: Type.Optional(Type.String()) });
export type RetentionRemoveResult = Static<typeof RetentionRemoveResult>;
export const retentionRemoveResultSchema = Type.Partial(RetentionRemoveResult);

/** POST /internal/artifacts/forget: drops the index row of a path whose blob is missing (and publishes its removal). */
export const forgetRequestSchema = Type.Object(where, { additionalProperties: false });
export type ForgetRequest = Static<typeof forgetRequestSchema>;
export const ForgetResult = Type.Object({ forgotten: Type.Boolean() });
export type ForgetResult = Static<typeof ForgetResult>;
export const forgetResultSchema = Type.Partial(ForgetResult);

/** The most digests or paths one batch call of a walk carries. */
export const WALK_BATCH_MAX = 1000;

/**
 * POST /internal/blobs/reclaim: blobs the walk listed that may be unreferenced. Each is removed
 * only if, under its digest's lock (the one a publish's commit takes), no index row references
 * it and it is untouched for `olderThanMs` (svc.storage.reclaim-grace): a publish in progress
 * never loses its blob.
 */
export const reclaimBlobsRequestSchema = Type.Object(
  { digests: Type.Array(hex64(), { maxItems: WALK_BATCH_MAX }), olderThanMs: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export type ReclaimBlobsRequest = Static<typeof reclaimBlobsRequestSchema>;
/** The blobs removed, with the bytes each freed; the others were referenced, young or gone. */
export const ReclaimBlobsResult = Type.Object({ removed: Type.Array(Type.Object({ sha256: Type.String(), size: Type.Integer() })) });
export type ReclaimBlobsResult = Static<typeof ReclaimBlobsResult>;
export const reclaimBlobsResultSchema = ReclaimBlobsResult;

/**
 * POST /internal/blobs/verify: a blob whose bytes the walk found not to match its digest. The
 * artifacts service reads it again; when it is indeed corrupt it removes it and forgets every
 * path that held it (each with its `artifact.removed` event), so no client is served bytes
 * that are not what was published. `forgotten` lists those paths (at most the first 100).
 */
export const verifyBlobRequestSchema = Type.Object({ sha256: hex64() }, { additionalProperties: false });
export type VerifyBlobRequest = Static<typeof verifyBlobRequestSchema>;
export const VerifyBlobResult = Type.Object({
  /** "intact": the bytes match after all; "corrupt": removed, its paths forgotten; "missing": no such blob. */
  outcome: Type.Unsafe<"intact" | "corrupt" | "missing">(Type.String()),
  forgotten: Type.Array(Type.Object({ repository: Type.String(), path: Type.String() })),
  forgottenCount: Type.Integer(),
});
export type VerifyBlobResult = Static<typeof VerifyBlobResult>;
export const verifyBlobResultSchema = VerifyBlobResult;

/**
 * POST /internal/repositories/:name/backfill: paths of one index page. For each, the
 * repository's format rebuilds its own index rows when they are missing (a Maven file's
 * version rows, …); `filled` counts the paths it did something for.
 */
export const backfillRequestSchema = Type.Object(
  { paths: Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.artifactPath }), { maxItems: WALK_BATCH_MAX }) },
  { additionalProperties: false },
);
export type BackfillRequest = Static<typeof backfillRequestSchema>;
export const BackfillResult = Type.Object({ filled: Type.Integer() });
export type BackfillResult = Static<typeof BackfillResult>;
export const backfillResultSchema = BackfillResult;

/**
 * POST /internal/repositories/:name/collect: the repository's format's own walk step, once per
 * repository walked: `gc` (the reclaim job: content nothing references, older than `graceMs`)
 * or `retention` (the retention job: the format's retention options). `counts` by name; none
 * when the format has no such step.
 */
export const collectRequestSchema = Type.Object(
  { step: Type.Unsafe<"gc" | "retention">({ type: "string", enum: ["gc", "retention"] }), graceMs: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export type CollectRequest = Static<typeof collectRequestSchema>;
export const CollectResult = Type.Object({ counts: Type.Record(Type.String(), Type.Integer()) });
export type CollectResult = Static<typeof CollectResult>;
export const collectResultSchema = CollectResult;
