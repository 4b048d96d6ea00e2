import { invalid } from "@svc/contracts";
import { isRepositoryName } from "./scope.js";

/**
 * A build cache's request target: `/cache/<cache>/<key>`. The cache name follows the rules of a
 * repository name (it is a grant's scope the same way); the key is what the build tool names an
 * entry by: Gradle's one segment (a hex hash), or Bazel's `ac/<sha256>` and `cas/<sha256>`.
 */
export interface CacheTarget {
  cache: string;
  /** The entry's key ("" for the cache itself, which serves nothing). */
  key: string;
}

/** Gradle's key: one segment of letters, digits, `.`, `_` and `-` (it sends a hex hash). */
const GRADLE_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;
/** Bazel's action cache and content-addressed store: a lowercase hex SHA-256. */
const BAZEL_KEY = /^(?:ac|cas)\/[0-9a-f]{64}$/;

export const CACHE_KEY_RULE = "a key is one segment of letters, digits, '.', '_' and '-' (Gradle), or ac/<sha256> or cas/<sha256> (Bazel)";

/**
 * Reads `/cache/<cache>[/<key>]` from the raw request URL (the query is ignored). Refuses (400)
 * a cache name that is not a repository-style name and a key of any other shape, so nothing
 * percent-encoded, dotted or nested ever reaches the store.
 */
export function parseCacheTarget(rawUrl: string): CacheTarget {
  const q = rawUrl.indexOf("?");
  const pathname = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const rest = pathname.slice("/cache/".length);
  const slash = rest.indexOf("/");
  const cache = slash < 0 ? rest : rest.slice(0, slash);
  if (!isRepositoryName(cache)) throw invalid("cache", "not a valid cache name (letters, digits, '.', '_' and '-', starting with a letter or digit)");
  const key = slash < 0 ? "" : rest.slice(slash + 1);
  if (key !== "" && !GRADLE_KEY.test(key) && !BAZEL_KEY.test(key)) throw invalid("key", `not a build cache key: ${CACHE_KEY_RULE}`);
  return { cache, key };
}
