import { LIMITS } from "@svc/contracts";
/**
 * A scope is a repository name or `*`, optionally narrowed to a path prefix:
 * `<repository>:<prefix>`. A prefix covers a path only at or under it on a segment
 * boundary: `libs:com/acme` covers `com/acme` and `com/acme/x.jar`, never `com/acmecorp`.
 */
// C0 and C1 controls, DEL and the bidirectional embeddings, overrides and isolates.
const CONTROL = "[\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]";
const CONTROL_RE = new RegExp(CONTROL);
const shown = (s: string) => s.replace(new RegExp(CONTROL, "g"), "?");
const REPOSITORY_RE = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${LIMITS.repositoryName - 1}}$`);

export interface Scope {
  /** Repository name, or "*" for every repository. */
  repository: string;
  /** Normalised prefix segments joined by "/", without leading or trailing slash; "" = whole repository. */
  prefix: string;
}

export function isRepositoryName(name: string): boolean {
  return REPOSITORY_RE.test(name) && name !== "." && name !== "..";
}

export type ScopeResult = { ok: true; scope: Scope; text: string } | { ok: false; reason: string };

export function parseScope(input: string): ScopeResult {
  if (typeof input !== "string" || input.length === 0) return { ok: false, reason: "a scope is required" };
  if (input.length > LIMITS.scope) return { ok: false, reason: "scope is too long" };
  const colon = input.indexOf(":");
  const repository = colon < 0 ? input : input.slice(0, colon);
  if (repository !== "*" && !isRepositoryName(repository)) {
    return { ok: false, reason: `"${shown(repository)}" is not a repository name or *` };
  }
  if (colon < 0) return { ok: true, scope: { repository, prefix: "" }, text: repository };
  const rawPrefix = input.slice(colon + 1);
  if (rawPrefix === "") return { ok: false, reason: "the path prefix after ':' is empty" };
  // Written exactly as it is stored: a scope is never rewritten behind the caller's back.
  if (rawPrefix.startsWith("/") || rawPrefix.endsWith("/") || rawPrefix.includes("//")) {
    return { ok: false, reason: `the path prefix "${shown(rawPrefix)}" must not start or end with "/" or hold an empty segment (write ${repository}:${rawPrefix.split("/").filter((s) => s !== "").join("/") || "<prefix>"})` };
  }
  const segments = rawPrefix.split("/");
  for (const s of segments) {
    if (s === "." || s === ".." || s.includes("\\") || CONTROL_RE.test(s)) {
      return { ok: false, reason: `path prefix segment "${shown(s)}" is not allowed` };
    }
  }
  const prefix = segments.join("/");
  return { ok: true, scope: { repository, prefix }, text: `${repository}:${prefix}` };
}

/** Whether `path` (repository-relative, no leading slash) lies at or under `prefix`. */
export function pathUnderPrefix(path: string, prefix: string): boolean {
  if (prefix === "") return true;
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || path.charCodeAt(prefix.length) === 47; /* "/" */
}
