import { invalid, type RetentionPolicy, LIMITS } from "@svc/contracts";
import { durationMs, parseIsoDuration } from "@svc/kit";
import { parseArtifactUrl } from "@svc/grants";

/**
 * A repository's retention policy, applied by the walker's `retention` job.
 *
 * In a raw repository an artifact is a folder and its versions are the files directly in that
 * folder, newest first by publish time (the last PUT at that path). A file is removed when it
 * meets every age rule that is set (`maxAge`: published longer ago than this; `unusedFor`: not
 * downloaded, or never downloaded and published, longer ago than this) and is not one of the
 * `keepVersions` newest versions of its folder. With `keepVersions` alone, everything past the
 * newest N of each folder goes. `path` narrows the policy to artifacts at or under a folder.
 * Held artifacts and files the metadata does not know yet are never removed.
 * The walker reads the policy through the internal routes, hence its type in @svc/contracts.
 */
export type { RetentionPolicy };

export const MAX_KEEP_VERSIONS = 100_000;

export const retentionPolicySchema = {
  type: "object",
  properties: {
    path: { type: "string", maxLength: LIMITS.artifactPath },
    keepVersions: { type: "integer" },
    maxAge: { type: "string", maxLength: 64 },
    unusedFor: { type: "string", maxLength: 64 },
  },
  additionalProperties: false,
} as const;

const checkDuration = (field: string, text: string): string => {
  const d = parseIsoDuration(text);
  if (!d || durationMs(d) <= 0) throw invalid(field, `${field} must be a positive ISO-8601 duration such as P30D or PT12H`);
  return text.trim();
};

/** Validates a policy as given by an operator; throws a 400 naming the field. */
export function parseRetentionPolicy(body: RetentionPolicy): RetentionPolicy {
  const out: RetentionPolicy = {};
  if (body.path !== undefined && body.path.replace(/^\/+|\/+$/g, "") !== "") {
    const trimmed = body.path.replace(/^\/+|\/+$/g, "");
    try {
      out.path = parseArtifactUrl(`/repository/x/${trimmed.split("/").map(encodeURIComponent).join("/")}`).path;
    } catch {
      throw invalid("path", "path must be a folder path inside the repository (no empty, '.' or '..' segments)");
    }
  }
  if (body.keepVersions !== undefined) {
    if (!Number.isInteger(body.keepVersions) || body.keepVersions < 1 || body.keepVersions > MAX_KEEP_VERSIONS) {
      throw invalid("keepVersions", `keepVersions must be a whole number from 1 to ${MAX_KEEP_VERSIONS}`);
    }
    out.keepVersions = body.keepVersions;
  }
  if (body.maxAge !== undefined) out.maxAge = checkDuration("maxAge", body.maxAge);
  if (body.unusedFor !== undefined) out.unusedFor = checkDuration("unusedFor", body.unusedFor);
  if (out.keepVersions === undefined && out.maxAge === undefined && out.unusedFor === undefined) {
    throw invalid("keepVersions", "a retention policy needs at least one of keepVersions, maxAge, unusedFor");
  }
  return out;
}
