/**
 * Tells a failure caused by a dependency that is down or full apart from a bug, so the caller
 * is told to come back (503 with Retry-After) or that the store is full (507) instead of a bare
 * 500. Walks the error's causes: undici, node-postgres and the internal client wrap the system
 * error they met.
 */
export type DependencyFailure = "unavailable" | "full";

/** A full disk or quota: nothing was written. */
const FULL = new Set(["ENOSPC", "EDQUOT"]);

/** A dependency that does not answer: refused, reset, unreachable, not resolvable now, timed out. */
const DOWN = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENOTFOUND",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  // PostgreSQL: the server is shutting down or starting, or out of connection slots.
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

/** node-postgres names a lost or unobtainable connection only in its message. */
const DOWN_MESSAGE = /^(Connection terminated|timeout exceeded when trying to connect)/;

export function dependencyFailure(err: unknown, depth = 0): DependencyFailure | undefined {
  if (depth > 5 || typeof err !== "object" || err === null) return undefined;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; error?: unknown; errors?: unknown; status?: unknown; name?: unknown };
  if (typeof e.code === "string") {
    if (FULL.has(e.code)) return "full";
    if (DOWN.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code)) return "unavailable";
  }
  if (typeof e.message === "string" && DOWN_MESSAGE.test(e.message)) return "unavailable";
  // Another service of ours said it cannot serve now.
  if (e.name === "InternalCallError" && e.status === 503) return "unavailable";
  // The object store does not answer (@svc/blobs: unreachable, timed out, or answering 5xx).
  if (e.name === "BlobStoreUnavailable") return "unavailable";
  for (const inner of [e.cause, e.error, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const found = dependencyFailure(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}
