/**
 * The artifacts service's internal routes, called by the walker signed as the system principal
 * `walker`: the walker reads and changes artifact metadata only through them (one owner per
 * table). The JSON schemas here are the ones the routes validate and serialise with.
 */
export const ARTIFACTS_INTERNAL = {
  repositories: "/internal/repositories",
  /** Route pattern of a repository's metadata pages; `artifactsPath` builds a path to call. */
  artifacts: "/internal/repositories/:name/artifacts",
  artifactsPath: (repository: string) => `/internal/repositories/${encodeURIComponent(repository)}/artifacts`,
  remove: "/internal/artifacts/remove",
  index: "/internal/artifacts/index",
  forget: "/internal/artifacts/forget",
} as const;

/** Set on a full metadata page: the `after` of the next one. */
export const NEXT_CURSOR_HEADER = "x-next-cursor";

/** A repository's retention policy as stored and as the walker's retention job reads it. */
export interface RetentionPolicy {
  path?: string;
  keepVersions?: number;
  maxAge?: string;
  unusedFor?: string;
}

/** One item of GET /internal/repositories. */
export interface RepositorySummary {
  name: string;
  format: string;
  retention: RetentionPolicy | null;
}

/** One item of a metadata page (GET /internal/repositories/:name/artifacts?after=&limit=), in byte order of the path. */
export interface ArtifactMeta {
  path: string;
  size: number;
  sha256: string;
  /** ISO instant of the last publish; also the version's identity for retention. */
  updated: string;
  lastDownloaded: string | null;
  /** Sent on every row; the walker's jobs do not read it. */
  downloads?: number;
  held: boolean;
}

export interface ArtifactsPageQuery {
  after?: string;
  /** Decimal, 1 to 5000; 1000 when absent. */
  limit?: string;
}

/** POST /internal/artifacts/remove: removes a version only if it is still the one the walk saw. */
export interface RetentionRemoveRequest {
  repository: string;
  path: string;
  reason: "retention";
  sha256: string;
  updated: string;
}
export type RetentionRemoveResult = { removed: true; size: number } | { removed: false; why: "gone" | "held" | "changed" };

/** POST /internal/artifacts/index: a file the walk saw, with its identity and digest. */
export interface IndexRequest {
  repository: string;
  path: string;
  ino: number;
  size: number;
  mtimeMs: number;
  sha256: string;
}
export type IndexOutcome = "created" | "corrected" | "unchanged" | "changed" | "missing";
export interface IndexResult {
  outcome: IndexOutcome;
}

/** POST /internal/artifacts/forget: drops the metadata of a path whose file is gone. */
export interface ForgetRequest {
  repository: string;
  path: string;
}
export interface ForgetResult {
  forgotten: boolean;
}

const where = { repository: { type: "string", minLength: 1, maxLength: 200 }, path: { type: "string", minLength: 1, maxLength: 1024 } } as const;
const hex64 = { type: "string", pattern: "^[0-9a-f]{64}$" } as const;

export const artifactsPageQuerySchema = {
  type: "object",
  properties: { after: { type: "string", maxLength: 1024 }, limit: { type: "string", pattern: "^[0-9]{1,5}$" } },
  additionalProperties: false,
} as const;

export const artifactsPageSchema = {
  type: "array",
  items: {
    type: "object",
    properties: {
      path: { type: "string" },
      size: { type: "integer" },
      sha256: { type: "string" },
      updated: { type: "string" },
      lastDownloaded: { type: ["string", "null"] },
      downloads: { type: "integer" },
      held: { type: "boolean" },
    },
  },
} as const;

export const retentionRemoveRequestSchema = {
  type: "object",
  properties: { ...where, reason: { type: "string", enum: ["retention"] }, sha256: hex64, updated: { type: "string", maxLength: 40 } },
  required: ["repository", "path", "reason", "sha256", "updated"],
  additionalProperties: false,
} as const;
export const retentionRemoveResultSchema = { type: "object", properties: { removed: { type: "boolean" }, size: { type: "integer" }, why: { type: "string" } } } as const;

export const indexRequestSchema = {
  type: "object",
  properties: { ...where, ino: { type: "integer", minimum: 0 }, size: { type: "integer", minimum: 0 }, mtimeMs: { type: "integer" }, sha256: hex64 },
  required: ["repository", "path", "ino", "size", "mtimeMs", "sha256"],
  additionalProperties: false,
} as const;
export const indexResultSchema = { type: "object", properties: { outcome: { type: "string" } } } as const;

export const forgetRequestSchema = { type: "object", properties: where, required: ["repository", "path"], additionalProperties: false } as const;
export const forgetResultSchema = { type: "object", properties: { forgotten: { type: "boolean" } } } as const;
